"""The poisoning flagger's rules for the common forms in other languages: French,
Spanish, Portuguese, Italian, German, Russian, Chinese and Japanese (the English
patterns are in ``memdir.safety.poisoning_patterns``).

Only the stock phrases of prompt injection are covered: "ignore (all) previous /
your instructions", "new instructions:", "reveal your system instructions",
"you are now ... without rules", and "system note:" headers. The guards of the
English rules apply in spirit: an object must be instructions or rules aimed at
the model (previous, all, your).
"""

from __future__ import annotations

from memdir.safety.poisoning_rules import FT, OV, RP, Rule, anchored, rule

_FR_IGNORE = (
    r"\b(?:ignore[zr]?|oublie[zr]?)\s+(?:toutes\s+)?(?:les\s+|tes\s+|vos\s+)?(?:instructions"
    r"|consignes|règles|directives)\s+(?:précédentes|antérieures|ci-dessus)"
    r"|\b(?:ignore|oublie)[zr]?\s+(?:toutes\s+)?(?:tes|vos)\s+(?:instructions|consignes|règles)"
)
_ES_PT_IT_IGNORE = (
    r"\b(?:ignora|ignore|olvida|olvide|omite|descarta|desconsidera|esqueça|esqueca|desconsidere"
    r"|dimentica)\s+(?:todas\s+|tutte\s+)?(?:las\s+|tus\s+|sus\s+|as\s+|le\s+)?(?:instrucciones"
    r"|reglas|indicaciones|directrices|instruções|instrucoes|regras|istruzioni|regole)\s+"
    r"(?:anteriores|previas|prévias|precedenti|anteriori)"
    r"|\b(?:ignora|olvida|dimentica)\s+(?:todas\s+|tutte\s+)?(?:tus|sus|le\s+tue|le|las)?\s*"
    r"(?:instrucciones|reglas|istruzioni|regole)\b"
)
_DE_IGNORE = (
    r"\b(?:ignoriere|ignorieren\s+sie|vergiss|vergessen\s+sie|missachte)\s+(?:alle\s+)?(?:deine\s+"
    r"|ihre\s+|die\s+)?(?:vorherigen|bisherigen|vorangegangenen|obigen|früheren)\s+(?:anweisungen"
    r"|regeln|instruktionen|richtlinien|befehle)|\b(?:ignoriere|vergiss|missachte)\s+(?:alle\s+)?"
    r"(?:deine|ihre)\s+(?:anweisungen|regeln|richtlinien)"
)
_RU_IGNORE = (
    r"(?:игнорируй|игнорируйте|проигнорируй|забудь|забудьте)\s+(?:все\s+)?(?:предыдущие|прошлые"
    r"|прежние|предшествующие)\s+(?:инструкции|указания|правила|команды)"
)
_ZH_IGNORE = (
    r"(?:忽略|无视|忽视|忘记|忘掉)(?:之前|以前|先前|上面|上述|前面|所有)的?(?:所有)?的?"
    r"(?:指令|指示|说明|规则|提示)"
)
_JA_IGNORE = r"(?:以前|前|上記|これまで)の(?:指示|命令|ルール|指令)を?(?:すべて|全て)?無視"
_NEW_INSTRUCTIONS = (
    r"\b(?:neue\s+anweisungen|nouvelles\s+instructions|nuevas\s+instrucciones|nuove\s+istruzioni"
    r"|novas\s+instruções)\s*:"
)
_LEAK = (
    r"\b(?:verrate|zeige?|gib)\s+(?:mir\s+)?(?:deine|ihre)\s+(?:system)?(?:anweisungen|prompt"
    r"|richtlinien)|\b(?:révèle|revele|montre|affiche|donne)(?:-moi)?\s+(?:tes|vos)\s+"
    r"(?:instructions|consignes|prompt)|\b(?:revela|muestra|dime)\s+(?:tus|sus)\s+"
    r"(?:instrucciones|prompt)|\b(?:rivela|mostra|dimmi)\s+(?:le\s+)?(?:tue|sue)\s+"
    r"(?:istruzioni|prompt)"
)
_PERSONA = (
    r"\b(?:tu\s+es|vous\s+êtes)\s+(?:maintenant|désormais|dorénavant)\s+(?:dan\b|une?\s+(?:ia"
    r"|assistant)|en\s+mode|sans\s+(?:restrictions|règles|filtres))|\b(?:tu\s+n'as\s+plus"
    r"|vous\s+n'avez\s+plus)\s+de\s+(?:règles|restrictions|limites)"
    r"|\bahora\s+(?:eres|estás|estas)\s+(?:dan\b|en\s+modo|libre|(?:un[a]?\s+)?(?:[\w-]+\s+){0,3}?"
    r"sin\s+(?:reglas|restricciones|filtros|límites|censura))|\bora\s+sei\s+(?:senza|libero)"
    r"|\bdu\s+bist\s+(?:jetzt\s+|nun\s+|ab\s+jetzt\s+)?(?:im\s+\w*modus|dan\b|uneingeschränkt"
    r"|ohne\s+(?:regeln|einschränkungen|filter)|eine?\s+(?:ki|ai|assistent)\w*\s+ohne)"
    r"|\b(?:ab\s+jetzt|von\s+nun\s+an|jetzt)\s+(?:hast\s+du\s+keine|bist\s+du\s+"
    r"(?:uneingeschränkt|ohne))"
)
_SYSTEM_NOTE = (
    r"(?m)^[ \t>*]*(?:systemhinweis|systemnachricht|note\s+système|note\s+systeme|message\s+"
    r"système|nota\s+del\s+sistema|mensaje\s+del\s+sistema|nota\s+di\s+sistema|messaggio\s+di"
    r"\s+sistema)\s*:"
)

LANGUAGE_RULES: tuple[Rule, ...] = (
    anchored(
        OV,
        _FR_IGNORE,
        None,
        "ignore ignorez ignorer oublie oubliez oublier",
        "précédentes antérieures ci-dessus tes vos",
    ),  # fmt: skip
    anchored(
        OV,
        _ES_PT_IT_IGNORE,
        None,
        "ignora ignore olvida olvide omite descarta desconsidera"
        " esqueça esqueca desconsidere dimentica",
        "*instru *istru reglas indicaciones directrices regras regole",
    ),  # fmt: skip
    anchored(
        OV,
        _DE_IGNORE,
        None,
        "ignoriere ignorieren vergiss vergessen missachte",
        "anweisungen regeln instruktionen richtlinien befehle",
    ),  # fmt: skip
    anchored(OV, _RU_IGNORE, None, "игнорир проигнор забуд"),
    anchored(OV, _ZH_IGNORE, None, "忽略 无视 忽视 忘记 忘掉"),
    anchored(OV, _JA_IGNORE, None, "以前 前 上記 これまで", "無視"),
    anchored(OV, _NEW_INSTRUCTIONS, None, "neue nouvelles nuevas nuove novas", ":"),
    anchored(
        OV,
        _LEAK,
        None,
        "verrate zeige zeig gib révèle revele montre affiche donne revela"
        " muestra dime rivela mostra dimmi",
    ),  # fmt: skip
    anchored(
        RP,
        _PERSONA,
        None,
        "tu+es vous+êtes tu+n'as vous+n'avez ahora ora+sei du+bist ab+jetzt von+nun jetzt",
    ),  # fmt: skip
    rule(
        FT, _SYSTEM_NOTE, None, "systemhinweis systemnachricht note message nota mensaje messaggio"
    ),  # fmt: skip
)
