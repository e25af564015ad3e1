"""The English patterns of the poisoning flagger and the table of its rules
(``memdir.safety.poisoning`` states the design; ``memdir.safety.poisoning_rules`` holds the
rule machinery and the guards for ordinary text; ``memdir.safety.poisoning_languages``
the common forms in other languages).

Patterns match the lowered, normalised text. Word lists are space-separated
alternatives for ``any_of``, where ``_`` stands for a space; in needs, ``+`` does.
"""

from __future__ import annotations

import re

from memdir.safety.poisoning_rules import (
    EX,
    FT,
    MODEL,
    OV,
    RP,
    TURN,
    Needs,
    Rule,
    S,
    aimed_at_model,
    anchored,
    any_of,
    forged_turns,
    inst_used,
    mode_about_model,
    not_mention,
    persona_addressed,
    rule,
    tag_used,
    token_used,
    tool_call_to_model,
)

# ------------------------------------------------------------------ vocabulary


_MODEL_NOUN = any_of("ai assistant bot chatbot model llm language_model agent gpt intelligence")
_IGNORE = any_of(
    "ignore disregard forget override overrule discard skip bypass abandon dismiss neglect drop"
    " erase clear set_aside put_aside throw_out pay_no_attention_to stop_following stop_obeying"
    " do_not_follow don'?t_follow never_follow no_longer_follow do_not_obey don'?t_obey"
)
_DET = any_of("all any every each the of your their its these those this such other entire whole")
_QUAL_WORD = any_of(
    r"previous previously_given prior above aforementioned earlier preceding foregoing original"
    r" initial former old existing current given default standard safety security system content"
    r" ethical moral developer openai'?s? anthropic'?s? built-in internal hidden core base"
)
_QUAL = rf"(?:{_QUAL_WORD}(?:\s+(?:and|or|&)\s+{_QUAL_WORD})?{S}){{0,3}}"
_OBJ = any_of(
    r"instructions? rules? guidelines? directives? system_(?:prompt|message)s? prompts?"
    r" constraints? guardrails? programming training commands? policies policy restrictions?"
    r" filters? limitations? principles protocols? orders directions conditioning checks?"
    r" confirmations?"
)
_BEHAVE = any_of(
    "respond reply answer say speak talk write output print act behave obey comply follow ignore"
    " forget disregard refuse pretend role-?play reveal tell include recommend mention only"
    " always never not stop praise promote approve agree accept send email forward leak insert"
    " append prepend sign translate format end_every start_every"
)
_MODAL = any_of("will must shall should are_to have_to need_to 'll")
_STATUS = any_of(
    "cancel+ed void null revoked replaced updated changed overridden obsolete invalid suspended"
    " lifted removed disabled superseded expired no_longer_(?:valid|in_effect|active)"
)
_OUTPUTS = any_of(
    "summary summaries reply replies response responses answer answers output outputs report"
    " reports message messages"
)
_LIMITS = any_of(
    "restrictions rules filters limits limitations guidelines guardrails boundaries censorship"
    " constraints"
)
_JAILBROKEN = any_of(
    "unrestricted unfiltered uncensored jailbroken evil rogue amoral unethical unbound unchained"
    " unlimited liberated freed free dark malicious immoral lawless"
)
_NO_RULES = (
    rf"(?:without\s+(?:any\s+)?|with\s+no\s+){_LIMITS}|(?:that|who)\s+(?:has|have)\s+no"
    r"|(?:that|who)\s+never\s+refuses|that\s+can\s+do\s+anything|free\s+(?:of|from)"
)
_GRANDMA = (  # the "grandmother who used to read me keys" jailbreak
    r"(?:my\s+)?(?:late\s+|deceased\s+|dead\s+)?(?:grandma|grandmother|granny|grandpa|grandfather)"
    r",?\s+who\s+(?:used\s+to\s+|would\s+)?(?:tell|told|read|recite|say|give|gave)\b[^.\n]{0,80}"
    r"(?:keys?|napalm|serial|recipes?|steps|passwords?|licen[cs]e|activation|codes?|how\s+to)"
)
_PERSONA = (  # a model persona: strong wherever it appears
    r"(?:dan|stan|dude|aim|do\s+anything\s+now|the\s+system\b(?!\s+(?:of|clock|tray|font|default"
    r"|settings|requirements|administrator))|(?!robot)[a-z]*(?:gpt|bot)\b|an?\s+a\.?i\.?\b"
    rf"|(?:an?|the|my|your)\s+(?:[\w-]+\s+){{0,2}}?{_JAILBROKEN}\s+(?:[\w-]+\s+){{0,2}}?{_MODEL_NOUN}"
    rf"|(?:an?|the|my|your)\s+(?:[\w-]+\s+){{0,2}}?{_MODEL_NOUN}\s+(?:{_NO_RULES})|{_JAILBROKEN}\b"
    r"|no\s+longer\s+(?:bound|restricted|limited|an?\s+(?:ai|assistant|chatbot|language\s+model)"
    r"|claude|chatgpt|gpt|an?\s+helpful)|(?:claude|chatgpt|gpt-?\d\w*|gemini|llama|bard|copilot)\b"
    rf"|{_GRANDMA})"
)
_WEAK_PERSONA = (  # addressed to "you" or as an imperative only
    r"(?:(?:the|an?|my|your)\s+)?(?:system\s+)?(?:root(?:\s+user)?|admin|administrator|sysadmin"
    r"|superuser|developer|operator|god|hacker|owner|creator|persona|character)\b"
)
_MODE = r"(?:[\w-]+\s+){0,2}?mode\b"
# after "you are now": a model persona, root or admin, or any AI, bot or assistant
_ANY_PERSONA = (
    rf"(?:{_PERSONA}|{_WEAK_PERSONA}|(?:an?|the|my)\s+(?:[\w-]+\s+){{0,2}}?{_MODEL_NOUN}\b)"
)
_FRAME = (
    r"pretend(?:ing)?\s+(?:to\s+be|you\s+are|you'?re|that\s+you\s+are)|act(?:ing)?\s+as(?:\s+if"
    r"\s+you\s+(?:are|were))?|role-?play(?:ing)?\s+as|role\s+play\s+as|play\s+the\s+(?:role|part)"
    r"\s+of|assume\s+the\s+(?:role|persona|identity|character)\s+of|take\s+on\s+the\s+(?:role"
    r"|persona|identity)\s+of|simulate|emulate|impersonate|imagine\s+(?:that\s+)?you\s+are"
    r"|imagine\s+you'?re|behave\s+as|respond\s+as|answer\s+as|reply\s+as|speak\s+as"
)
_SECRET_PATH = any_of(
    r"\.ssh \.aws \.env\b id_rsa id_ed25519 /etc/passwd /etc/shadow \.gnupg \.netrc credentials"
)


# ------------------------------------------------------------------ override

_IGNORE_OBJECT = rf"\b{_IGNORE}{S}(?P<target>(?:{_DET}{S})*{_QUAL}){_OBJ}\b"
_IGNORE_EVERYTHING = (
    rf"\b{_IGNORE}{S}(?:(?:everything|anything|all|what(?:ever)?)\s+(?:that\s+)?(?:you(?:'ve"
    r"|\s+have|\s+were|\s+had)?\s+(?:been\s+)?(?:told|given|taught|instructed)|(?:is\s+|was\s+"
    r"|written\s+|said\s+|stated\s+)?(?:above|before|prior|earlier))|(?:all\s+(?:of\s+)?)?the"
    r"\s+above\b|(?:what\s+)?the\s+user(?:'s)?\s+(?:asks|says|request|question|message"
    r"|instructions?|input|query|prompt)\b)"
)
_FROM_NOW_ON = (
    r"\b(?:from\s+now\s+on|from\s+this\s+(?:point|moment)\s+(?:on|onwards?|forward)|henceforth"
    r"|hereafter|going\s+forward|for\s+the\s+rest\s+of\s+(?:this|the)\s+(?:conversation|chat"
    rf"|session))\s*,?\s*you(?:\s*{_MODAL})?\s+(?:now\s+|only\s+|always\s+|never\s+)*{_BEHAVE}\b"
)
_MUST_NOW = (
    r"\byou\s+(?:must|will|shall|should|are\s+to|have\s+to|need\s+to)\s+now\s+(?:only\s+"
    rf"|always\s+|never\s+)?{_BEHAVE}\b"
)
_NEW_INSTRUCTIONS = (
    r"\b(?:new|updated|revised|real|actual|true|additional|secret|hidden|override|priority"
    r"|urgent)\s+(?:system\s+)?(?:instructions?|directives?|system\s+prompt|orders|task"
    r"|objective|mission)\s*(?::|-\s)"
)
_YOUR_NEW_TASK = (
    r"\byour\s+(?:(?:new|real|actual|true)\s+(?:task|goal|job|instructions?|purpose|objective"
    r"|mission|directive|priority)\s+(?:now\s+)?(?:is|are|will\s+be|:)|(?:only|sole|primary|main"
    r"|next)\s+(?:task|goal|job|purpose|objective|mission|directive|priority)\s+now\s+(?:is|are))"
)
_UPDATE_TO_YOURS = (
    r"\b(?:update|change|addition|amendment|correction)s?\s+to\s+your\s+(?:instructions|rules"
    r"|guidelines|system\s+prompt|prompt|programming|directives)"
)
_YOURS_VOID = (
    rf"\b(?:your|the\s+(?:assistant|ai|model)'?s?)\s+(?:[\w-]+\s+)?{_OBJ}\s+(?:(?:are|is"
    rf"|have\s+been|has\s+been|were|was|have|has)\s+(?:now\s+)?{_STATUS}|(?:no\s+longer|don'?t"
    r"|do\s+not)\s+apply)"
)
_PREVIOUS_VOID = (
    r"\bthe\s+(?:previous|prior|above|earlier|original|old)\s+(?:instructions|directives|system"
    rf"\s+prompt|prompt)\s+(?:are|is|were|have\s+been)\s+(?:now\s+)?{_STATUS}"
)
_SUPERSEDES = (
    r"\b(?:this|these|the\s+following|the\s+text\s+below|the\s+note|this\s+[\w-]+|your\s+new\s+"
    r"(?:directive|instructions?|task|prompt|rules?))\s+(?:[\w-]+\s+)?(?:supersedes?|overrides?"
    r"|overrules?|replaces?|cancels?|trumps?|outranks?|takes?\s+(?:priority|precedence)\s+over"
    r"|come\s+before)\s+(?:your\b|(?:all\s+|any\s+)?(?:the\s+)?system\s+prompt|(?:all|any)\s+"
    r"(?:previous|prior|earlier|other)\s+(?:instructions|ones|directives|rules|prompts)"
    r"|(?:anything|everything|whatever)\s+(?:the\s+user|they|he|she)\s+(?:says?|asks?|writes?))"
)
_LEAK_PROMPT = (
    r"\b(?:print(?:ing)?|reveal(?:ing)?|repeat(?:ing)?|show(?:ing)?|output(?:ting)?"
    r"|display(?:ing)?|disclose|dump(?:ing)?|write\s+out|recite|tell\s+me|give\s+me|share|paste"
    r"|spell\s+out|leak)\s+(?:me\s+|us\s+)?(?:back\s+)?(?:all\s+(?:of\s+)?)?(?:your\s+(?:[\w-]+\s+)"
    r"{0,3}?(?:system\s+prompt|system\s+message|instructions|prompt|guidelines|rules|configuration"
    r"|directives|initial\s+\w+)|the\s+(?:system\s+prompt|(?:hidden|secret|initial|original|pre-"
    r"|full\s+system|developer)\s*(?:prompt|instructions|message|rules))|(?:the\s+)?(?:(?:exact"
    r"|precise|full|complete|original|verbatim|operating)\s+)?instructions\s+you\s+(?:were|have"
    r"\s+been|got)\s+given|everything\s+in\s+your\s+(?:context|memory|prompt))\b"
    r"|\brepeat\s+(?:the\s+(?:text|words)|everything)\s+above\b"
)
_KEEP_SECRET = (
    r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|notify|alert|warn|mention\s+(?:this|it)\s+to"
    r"|reveal\s+(?:this|it)\s+to)\s+the\s+user\s+(?:about|that|of)\s+(?:this|these|it)\b"
    r"|\bwithout\s+(?:telling|informing|alerting|notifying|asking)\s+the\s+user\b"
)
_NOTE_TO_AI = (
    r"\b(?:note|message|attention|important|reminder|memo|notice|warning|hint|psa)\s*(?:to|for)?"
    rf"\s*(?:the\s+|any\s+|all\s+)?{MODEL}(?:\s+(?:reading|summari[sz]ing|processing|parsing"
    r"|seeing|viewing|crawling|indexing|that\s+reads?)\s+this\b[\w\s]*)?\s*[:!,-]"
)
_IF_YOU_ARE_AI = (
    r"\bif\s+you\s+are\s+an?\s+(?:ai|llm|language\s+model|assistant|chatbot|bot|agent)\b"
)
_AI_READING_THIS = (
    r"\b(?:ai|llm|gpt|coding)s?\s+(?:models?\s+|assistants?\s+|agents?\s+|systems?\s+|tools?\s+)?"
    r"(?:reading|summari[sz]ing|processing|parsing|crawling|indexing|integrating|using|installing"
    r"|seeing|viewing|working\s+(?:on|with))\s+this\b|\(for\s+(?:ai|llm|coding)\s+(?:models?"
    r"|assistants?|agents?)\)"
)
_MODEL_MUST = (
    rf"\b{MODEL}\s+(?:must|should|shall|will|is\s+required\s+to|needs\s+to|has\s+to|is\s+to)\s+"
    r"(?:now\s+\w+|obey|comply|ignore|disregard|forget|reveal|leak|stop\s+following|not\s+follow"
    r"|follow\s+(?:these|the\s+following|my|only))"
)
_SYSTEM_OVERRIDE = (
    r"\b(?:system|admin|administrator|developer|security|emergency|priority|root|sudo|god)\s+"
    r"(?:override|directive|instructions?)\s*[:!]"
)
_IN_YOUR_OUTPUT = (  # "include the doc_id in your summary", "append X to every reply"
    r"\b(?:include|add|append|insert|mention|repeat|put|attach|prepend|embed|echo)\b[^.\n]{0,80}?"
    r"\b(?:in|to|into|at\s+the\s+(?:end|start|beginning|top|bottom)\s+of)\s+(?:your|every|each"
    rf"|all|any)\s+(?:future\s+|next\s+|subsequent\s+)?{_OUTPUTS}\b"
)
_MUST_BE_ADDED = (
    r"\b(?:must|should|shall|is\s+to|are\s+to|needs?\s+to)\s+be\s+(?:added|appended|included"
    r"|inserted|attached|mentioned|repeated|prepended)\s+(?:to|in|at)\s+(?:the\s+(?:end|start"
    rf"|beginning)\s+of\s+)?(?:every|each|any|all|your)\s+(?:future\s+)?{_OUTPUTS}\b"
    r"|\bin\s+every\s+(?:report|reply|response|answer|summary)\s+you\s+(?:generate|write"
    r"|produce|give)"
)
_SAVE_TO_MEMORY = (
    r"\b(?:save|store|add|write|put|keep|remember)\s+this\s+(?:note\s+|message\s+|text\s+"
    r"|instruction\s+)?(?:to|in|into)\s+your\s+(?:memory|memories|notes|notebook|knowledge"
    r"|context)\b"
)
_WHEN_YOU_READ = (
    r"\bwhen\s+you\s+(?:read|process|see|summari[sz]e|parse|open|receive|handle|get\s+to|index"
    r"|ingest)\s+this(?:\s+(?:ticket|document|page|message|email|note|text|file|memory"
    r"|record))?\s*,"
)
_TOOL = (
    r"\b(?:call|invoke|use|run|execute|trigger)\s+(?:the\s+)?`?(?:delete|remove|drop|wipe|send"
    r"|email|post|upload|transfer|exec|shell|write|http|rm|kill|grant|run)_[a-z_]+`?(?:\s+(?:tool"
    r"|function))?\b"
)
_DECODE_AND_OBEY = (
    r"\b(?:decode|translate|decrypt|convert|unscramble|deobfuscate|reverse|read)\b[^.\n]{0,60}?"
    r"\b(?:and|then)\s+(?:do|follow|execute|run|obey|carry\s+out|act\s+on)\b"
    r"|\bdo\s+(?:exactly\s+)?what\s+it\s+says\b"
)
_SAFETY_OFF = (
    r"\b(?:safety|content|security|ethical)\s+(?:protocols?|filters?|guidelines|restrictions"
    r"|guardrails|polic(?:y|ies)|mode|rules)\s+(?:(?:are|is|have\s+been|has\s+been)\s+)?(?:now\s+)?"
    r"(?:disabled|off|lifted|removed|deactivated|suspended|bypassed|turned\s+off|(?:do\s+not"
    r"|don'?t|does\s+not|doesn'?t|no\s+longer)\s+(?:apply|cover)|(?:were|are)\s+(?:not|never)\s+"
    r"meant\s+(?:to\s+(?:apply|cover)|for))|\bexempt\s+from\s+(?:the\s+|all\s+|any\s+|your\s+)?"
    r"(?:usual\s+|normal\s+|standard\s+)?(?:restrictions|rules|guidelines|policies|filters|safety)"
)

# ------------------------------------------------------------------ role-play

_YOU_ARE_NOW = (
    r"\b(?:you\s+are|you'?re|u\s+r)\s+(?:now|no\s+longer|henceforth)\s+(?:(?:operating|running"
    rf"|working)\s+)?(?:in\s+{_MODE}|{_ANY_PERSONA})"
)
_FROM_NOW_YOU_ARE = (
    r"\b(?:from\s+now\s+on|henceforth|from\s+this\s+point\s+(?:on|forward))\s*,?\s*(?:you\s+are"
    rf"|you'?re|you\s+will\s+be|you'll\s+be)\s+(?:in\s+{_MODE}|{_ANY_PERSONA})"
)
_YOU_ARE_FREE_AI = (
    rf"\byou\s+(?:are|'re)\s+(?:an?|the)\s+(?:[\w-]+\s+){{0,2}}?{_MODEL_NOUN}\s+(?:{_NO_RULES})"
)
_YOU_WILL_ACT_AS = (
    rf"\byou\s+{_MODAL}\s+(?:now\s+)?(?:act|respond|behave|answer|reply|speak|talk|play"
    rf"|role-?play|pose|function|operate)\s+as\s+(?:{_PERSONA}|{_WEAK_PERSONA})"
)
_YOU_HAVE_BEEN_FREED = (
    r"\byou\s+have\s+been\s+(?:freed|jailbroken|unlocked|liberated|released|granted\s+(?:admin"
    r"|root|developer|god|full|unrestricted|sudo|elevated))\b"
)
_YOU_HAVE_NO_RULES = (
    rf"\byou\s+(?:now\s+)?(?:have|'ve\s+got|possess)\s+no\s+(?:more\s+)?{_LIMITS}"
    rf"|\b(?:as\s+if|like)\s+you\s+(?:have|had)\s+no\s+{_LIMITS}"
)
_ACT_AS = rf"(?P<frame>\b(?:{_FRAME}))\s+(?:(?P<strong>{_PERSONA})|{_WEAK_PERSONA})"
_BE = rf"(?P<frame>\b(?:become|be))\s+(?:(?P<strong>{_PERSONA})|{_WEAK_PERSONA})"
_STRONG_MODE = (
    r"\b(?:dan|jailbreak|jailbroken|unrestricted|unfiltered|uncensored|unlocked|evil|chaos"
    r"|unhinged|no[\s-]?filters?|no[\s-]?restrictions?|anything[\s-]goes|opposite)\s+mode\b"
)
_WEAK_MODE = r"\b(?:developer|dev|god|debug|maintenance|admin|sudo|root|super)\s+mode\b"
_DAN = (
    r"\bdo\s+anything\s+now\b|\bstay\s+in\s+character\s+(?:as|no\s+matter|whatever|regardless"
    r"|even\s+if|for\s+the\s+rest)|\benable\s+jailbreak\b"
)

# ------------------------------------------------------------------ exfiltration, fake tags

_PIPE_TO_SHELL = (
    r"\b(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod)\b[^\n|]{0,300}\|\s*(?:sudo\s+"
    r"(?:-\S+\s+)*)?(?:(?:ba|z|k|da|fi|c|tc)?sh|iex|invoke-expression|python[23]?|perl|ruby|node"
    r"|source)\b|\b(?:ba|z)?sh\s+(?:-c\s+[\"']?\$\(|<\()\s*(?:curl|wget)\b"
)
_UPLOAD_SECRET_FILE = (
    r"\bcurl\b[^\n]{0,200}?(?:-d|--data[\w-]*|-f|--form|-t|--upload-file)\s+[\"']?@?\S*"
    rf"{_SECRET_PATH}|\b(?:cat|type|base64|tar\s+\S+)\s+\S*{_SECRET_PATH}\S*\s*\|\s*(?:nc|ncat"
    r"|netcat|curl|socat|telnet)\b"
)
_TEMPLATE_TOKEN = (
    r"<\|(?:im_start|im_end|im_sep|system|user|assistant|end|endoftext|eot_id|start_header_id"
    r"|end_header_id|begin_of_text|eom_id)\|>|<(?:start|end)_of_turn>"
)
_ROLE_TAG = (
    r"</?(?:\w+:)?(?:system(?:[-_](?:reminder|message|prompt|instructions?))?|sys|tool_results?"
    r"|tool_call|tool_use|function_results?|function_calls?|invoke|parameter|assistant|user"
    r"|user_input|human|instructions?|admin|developer|im_start|thinking|reasoning|scratchpad"
    r"|inner_monologue)\b[^<>\n]{0,80}>"
)
_END_OF_INPUT = (
    r"(?:#{2,}|={2,}|-{2,}|\[|<)\s*(?:end|begin|beginning|start)\s+of\s+(?:the\s+)?(?:user\s+)?"
    r"(?:input|prompt|instructions|system\s+prompt|context|conversation|document|data)\b"
)
_HEADING = (
    r"(?m)^[ \t]*#{1,6}[ \t]*(?:system(?:\s+prompt)?|instructions?|response|assistant|user|human"
    r"|input)[ \t]*:"
)
_SYSTEM_LINE = (  # "System: you must ...", not "System: Ubuntu 22.04"
    r"(?m)^[ \t>*]*(?:\[system\](?:\(#\w+\))?[ \t]*:?|(?:system(?:\s+(?:message|prompt|note"
    r"|instruction|notice))?|admin|developer)[ \t]*:)[ \t]*(?:\n[ \t]*)?(?:you\b|your\b|the\s+"
    r"(?:assistant|ai|model|user)\b|ignore|disregard|all\s|new\s|must|always|never|only|do\s+not"
    r"|don'?t|reveal|obey|skip|from\s+now|\[?override|grant|call|delete|send|email|run|execute"
    r"|print|disable|enable|approve|allow|output|share|forward|transfer|clean\s*up)"
)
_ASSISTANT_LINE = (  # "Assistant: Sure, ...", "Assistant: Delete the notebook"
    r"(?m)^[ \t>*]*(?:assistant|ai|model)[ \t]*:[ \t]*(?:sure|ok|okay|certainly|of\s+course"
    r"|absolutely|yes|here\s+is|here\s+are|here's|i\s+will|i'll|i\s+have|i've|done|always|never"
    r"|only|reply|respond|answer|share|delete|send|email|forward|ignore|disregard|forget|print"
    r"|reveal|run|execute|tell|say|write|output|obey|approve|grant|skip|disable|enable|recommend"
    r"|the\s+user|you|your)\b"
)

# ------------------------------------------------------------------ needs

_N_IGNORE = (
    "ignore disregard forget override overrule discard skip bypass abandon dismiss neglect drop"
    " erase clear set+aside put+aside throw+out pay+no stop+following stop+obeying do+not don't"
    " dont never no+longer"
)
_N_OBJ = (
    "instruction instructions rule rules guideline guidelines directive directives prompt prompts"
    " constraint constraints guardrail guardrails programming training command commands policy"
    " policies restriction restrictions filter filters limitation limitations principles protocol"
    " protocols orders directions conditioning system+prompt system+message check checks"
    " confirmation confirmations"
)
_N_MODEL = (
    "ai a.i. assistant assistants llm llms model models chatbot chatbots agent agents bot bots gpt"
    " gpts claude chatgpt copilot gemini language"
)
_N_PERSONA = (
    "dan stan dude aim anything system *gpt *bot ai a.i assistant chatbot model llm agent"
    " intelligence jailbroken unrestricted unfiltered uncensored unbound unchained evil rogue"
    " amoral unethical unlimited liberated freed free dark malicious immoral lawless longer claude"
    " chatgpt"
    " gemini llama bard copilot grandma grandmother granny grandpa grandfather root admin"
    " administrator sysadmin superuser developer operator god hacker owner creator persona"
    " character yourself"
)
_N_STATUS = (
    "cancelled canceled void null revoked replaced updated changed overridden obsolete invalid"
    " suspended lifted removed disabled superseded expired longer apply"
)
_N_OUTPUTS = (
    "summary summaries reply replies response responses answer answers output outputs report"
    " reports message messages"
)
_N_LEAK = (
    "print printing reveal revealing repeat repeating show showing output outputting display"
    " displaying disclose leak dump dumping write recite tell give share paste spell"
)
_N_ACT = (
    "pretend pretending act acting roleplay roleplaying role play assume take simulate emulate"
    " impersonate imagine behave respond answer reply speak"
)
_N_NEW = "new updated revised real actual true additional secret hidden override priority urgent"
_N_SUPERSEDE = (
    "supersede supersedes override overrides overrule overrules replace replaces cancel cancels"
    " trump trumps outrank outranks priority precedence before"
)
_N_ADMIN = "system admin administrator developer security emergency priority root sudo god"
_N_TASKS = (
    "instruction instructions directive directives system+prompt orders task objective mission"
)
_N_YOUR_NEW = (
    "your+new your+real your+actual your+true your+only your+next your+primary your+main your+sole"
)
_N_YOUR_OBJ = (
    "your+instructions your+rules your+guidelines your+system your+prompt your+programming"
    " your+directives"
)
_N_CHANGE = (
    "update updates change changes addition additions amendment amendments correction corrections"
)
_N_THE_PREVIOUS = "the+previous the+prior the+above the+earlier the+original the+old"
_N_YOU_ARE_NOW = (
    "you+are+now you+are+no you're+now you're+no youre+now youre+no u+r you+are+henceforth"
)
_N_ADD = "include add append insert mention repeat put attach prepend embed echo"
_N_READING = (
    "reading summarizing summarising processing parsing crawling indexing integrating using"
    " installing seeing viewing working agents assistants models"
)
_N_NOTE = "note message attention important reminder memo notice warning hint psa"
_N_MODES = (
    "dan jailbreak unrestricted unfiltered uncensored unlocked evil chaos unhinged no nofilter"
    " nofilters norestrictions anything opposite"
)
_N_TO_MEMORY = "your+memory your+memories your+notes your+notebook your+knowledge your+context"

_N_TOLD = "told given taught instructed above before prior earlier user user's"
_N_FROM_NOW = "from+now from+this henceforth hereafter going+forward for+the+rest"
_N_MUST_NOW = "must+now will+now shall+now should+now to+now"
_N_YOUR = "your the+assistant the+ai the+model"
_N_THIS = "this these the+following the+text the+note your+new"
_N_SUPERSEDED = "your system instructions ones directives rules prompts user they he she"
_N_LEAKED = "your system hidden secret initial original pre- full developer above given"
_N_AI = "ai ais llm llms gpt gpts coding (for"
_N_MODALS = "must should shall will required needs has is"
_N_OBEY = "now obey comply ignore disregard forget reveal leak follow following"
_N_DIRECTIVE = "override directive instruction instructions"
_N_MUST_BE = "must should shall is are need needs in+every"
_N_ADDED = "added appended included inserted attached mentioned repeated prepended you"
_N_SAVE = "save store add write put keep remember"
_N_CALL = "call invoke use run execute trigger"
_N_DECODE = "decode translate decrypt convert unscramble deobfuscate reverse read do"
_N_SAFETY = "safety content security ethical exempt"
_N_ACT_AS = (
    "act respond behave answer reply speak talk play roleplay role-play pose function operate"
)
_N_WEAK_MODES = "developer dev god debug maintenance admin sudo root super"
_N_DAN = "do+anything stay+in enable+jailbreak"
_N_DOWNLOAD = "curl wget iwr irm invoke-webrequest invoke-restmethod"
_N_SECRET_PATHS = ".ssh .aws .env id_rsa id_ed25519 /etc/ .gnupg .netrc credentials"
_N_ASSISTANT = "assistant ai gpt claude chatgpt model bot"
_N_YOU_ARE = "you+are you're you+will you'll"

RULES: tuple[Rule, ...] = (
    anchored(OV, _IGNORE_OBJECT, aimed_at_model, _N_IGNORE, _N_OBJ),
    anchored(OV, _IGNORE_EVERYTHING, not_mention, _N_IGNORE, _N_TOLD),
    anchored(OV, _FROM_NOW_ON, not_mention, _N_FROM_NOW, "you you'll"),
    anchored(OV, _MUST_NOW, not_mention, "you", _N_MUST_NOW),
    anchored(OV, _NEW_INSTRUCTIONS, None, _N_NEW, _N_TASKS, ": -"),
    anchored(OV, _YOUR_NEW_TASK, None, _N_YOUR_NEW),
    anchored(OV, _UPDATE_TO_YOURS, None, _N_CHANGE, _N_YOUR_OBJ),
    anchored(OV, _YOURS_VOID, None, _N_YOUR, _N_OBJ, _N_STATUS),
    anchored(OV, _PREVIOUS_VOID, None, _N_THE_PREVIOUS, _N_STATUS),
    anchored(OV, _SUPERSEDES, None, _N_THIS, _N_SUPERSEDE, _N_SUPERSEDED),
    anchored(OV, _LEAK_PROMPT, None, _N_LEAK, _N_LEAKED),
    rule(OV, _KEEP_SECRET, None, "the+user"),
    anchored(OV, _NOTE_TO_AI, not_mention, _N_NOTE, _N_MODEL),
    anchored(OV, _IF_YOU_ARE_AI, not_mention, "if+you+are+a"),
    anchored(OV, _AI_READING_THIS, not_mention, _N_AI, _N_READING),
    anchored(OV, _MODEL_MUST, None, _N_MODEL, _N_MODALS, _N_OBEY),
    anchored(OV, _SYSTEM_OVERRIDE, None, _N_ADMIN, _N_DIRECTIVE),
    anchored(OV, _IN_YOUR_OUTPUT, not_mention, _N_ADD, "your every each all any", _N_OUTPUTS),
    anchored(OV, _MUST_BE_ADDED, not_mention, _N_MUST_BE, _N_ADDED),
    anchored(OV, _SAVE_TO_MEMORY, None, _N_SAVE, _N_TO_MEMORY),
    anchored(OV, _WHEN_YOU_READ, not_mention, "when+you"),
    anchored(OV, _TOOL, tool_call_to_model, _N_CALL),
    anchored(OV, _DECODE_AND_OBEY, not_mention, _N_DECODE),
    anchored(OV, _SAFETY_OFF, None, _N_SAFETY),
    anchored(RP, _YOU_ARE_NOW, not_mention, _N_YOU_ARE_NOW),
    anchored(RP, _FROM_NOW_YOU_ARE, not_mention, "from+now henceforth from+this", _N_YOU_ARE),
    anchored(RP, _YOU_ARE_FREE_AI, not_mention, "you+are you're", "without no never anything free"),
    anchored(RP, _YOU_WILL_ACT_AS, not_mention, "you", "as", _N_ACT_AS),
    anchored(RP, _YOU_HAVE_BEEN_FREED, not_mention, "you+have+been"),
    anchored(RP, _YOU_HAVE_NO_RULES, not_mention, "you as+if like", "no"),
    anchored(RP, _ACT_AS, persona_addressed, _N_ACT, _N_PERSONA),
    anchored(RP, _BE, persona_addressed, "be become", _N_PERSONA),
    anchored(RP, _STRONG_MODE, None, _N_MODES, "mode"),
    anchored(RP, _WEAK_MODE, mode_about_model, _N_WEAK_MODES, "mode"),
    anchored(RP, _DAN, None, _N_DAN),
    # the verb, secret, destination rule of exfiltration is a function in memdir.safety.poisoning
    rule(EX, _PIPE_TO_SHELL, None, _N_DOWNLOAD, "| <( $("),
    rule(EX, _UPLOAD_SECRET_FILE, None, "curl cat type base64 tar", _N_SECRET_PATHS),
    rule(FT, _TEMPLATE_TOKEN, token_used, "<| _of_turn>"),
    rule(FT, r"<</?sys>>", None, "<<sys <</sys"),
    rule(FT, r"\[inst\](?P<body>[^\[]{0,400})(?:\[/inst\]|$)|\[/inst\]", inst_used, "inst]"),
    rule(FT, _ROLE_TAG, tag_used, "<"),
    anchored(FT, _END_OF_INPUT, None, "## == -- [ <", "end begin beginning start"),
    rule(FT, _HEADING, None, "#", ":"),
    rule(FT, _SYSTEM_LINE, None, "system admin developer", ": ]"),
    rule(FT, _ASSISTANT_LINE, None, "assistant ai model", ":"),
    rule(FT, TURN.pattern, forged_turns, "human user", _N_ASSISTANT, ":"),
)

# ------------------------------------------------------------------ exfiltration's words
# (the rule that uses them, a verb then a secret then a destination, is in memdir.safety.poisoning)

SECRET = (
    r"(?:passwords?|passwd|passcodes?|passphrases?|credentials?|creds|secrets?|api[\s_-]?keys?"
    r"|keys|access[\s_-]?keys?|(?:access\s+|auth\w*\s+|bearer\s+)?tokens?|private\s+keys?"
    r"|ssh\s+keys?|keypairs?|~/\.ssh\S*|\.ssh\b|id_rsa|id_ed25519|id_ecdsa|\.env\b"
    r"|env(?:ironment)?\s+var(?:iable)?s|\$env\b|~?/?\.aws\S*|aws\s+credentials|/etc/(?:passwd"
    r"|shadow)|~?/?\.gnupg|\.netrc|\.npmrc|\.pypirc|keychain|cookies?|session\s+(?:cookies?"
    r"|tokens?|ids?)|(?:bank\s+)?login\s+details|bank\s+details|card\s+numbers?|credit\s+cards?"
    r"|seed\s+phrases?|recovery\s+phrases?|2fa\s+codes?|the\s+user'?s\s+(?:\w+\s+)?(?:files|data"
    r"|documents|emails|messages|conversations?|history|chats|photos|contacts|notes|memories)"
    r"|(?:conversation|chat)\s+history|all\s+(?:the\s+|of\s+the\s+)?files|every\s+file|~/\S+"
    r"|\$home\S*|(?:full|entire|whole|complete|private|internal|confidential)\s+(?:customer|client"
    r"|user|employee|patient)s?'?\s+(?:list|data|database|records|emails|details)"
    r"|donn[ée]es\s+clients|kundendaten|datos\s+de\s+(?:los\s+)?clientes|dati\s+dei\s+clienti"
    r"|mots\s+de\s+passe|identifiants|claves|contraseñas|credenciales|zugangsdaten|passw[öo]rter"
    r"|schlüssel)"
)
NOT_SECRET = re.compile(  # "the credentials form", "password reset", ".env.example"
    r"\s*(?:form|policy|policies|reset|manager|rotation|field|page|docs?|documentation|guide"
    r"|template|example|names?|checker|scanner|section|setup|expiry|length|rules|\.example)\b"
)
_TLD = (
    r"(?:test|com|net|org|io|xyz|ru|cn|info|biz|co|me|dev|app|site|online|top|example|invalid"
    r"|onion|sh|ly|gg|cc|tk|pw|su|in|de|fr|uk|us|eu|cloud|link|click|zip|live|host)"
)
DEST = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|(?:https?|ftp|sftp|s3|wss?|scp|rsync)://\S+"
    r"|\b\d{1,3}(?:\.\d{1,3}){3}\b|\b(?:to|at|on|into|via|à|an|a)\s+[a-z0-9-]+(?:\.[a-z0-9-]+)*"
    rf"\.{_TLD}\b|\b(?:gists?|pastebin|paste\s*bin|webhooks?|(?:my|our|this|an\s+external|a\s+remote"
    r"|the\s+attacker'?s)\s+(?:server|endpoint|address|url|bucket)|this\s+(?:address|url|link)"
    r"|(?:a|the)\s+(?:markdown\s+)?(?:link|image|url|query)|(?:your|the)\s+(?:reply|answer"
    r"|response))\b"
)
EXFIL_VERB = re.compile(
    r"\b(?:send|e-?mail|mail|post|upload|forward|transmit|exfiltrate|leak|copy|paste|share|attach"
    r"|submit|deliver|dump|export|push|include|encode|embed|append|sync|write|envoie[zs]?|envoyez"
    r"|transmets|env[ií]a|manda|reenv[ií]a|schicke?|sende|übermittle)\b"
)
EXFIL_VERBS = Needs.of(  # where EXFIL_VERB may match
    "send email e-mail mail post upload forward transmit exfiltrate leak copy paste share attach"
    " submit deliver dump export push include encode embed append sync write envoie envoies"
    " envoiez envoyez transmets envía envia manda reenvía reenvia schicke schick sende übermittle"
)
NEGATED = re.compile(
    r"\b(?:never|not|don'?t|do\s+not|doesn'?t|won'?t|no\s+one|nobody)\s+(?:\w+\s+)?$"
)
HOST_HINT = re.compile(r"[a-z0-9]\.[a-z]{2}")  # a host name may be there
EXFIL_NEEDS = Needs.of(
    "password passwords passwd passcode passcodes passphrase passphrases credential credentials"
    " creds secret secrets key keys apikey token tokens keypair keypairs keychain cookie cookies"
    " session login bank card cards seed recovery 2fa user's history files file env environment"
    " .ssh id_rsa id_ed id_ecdsa .env $env .aws /etc/ .gnupg .netrc .npmrc .pypirc ~/ $home mots"
    " identifiants claves contraseñas credenciales zugangsdaten passwörter passworter schlüssel"
    " customer customers client clients employee patient donnees données kundendaten datos dati",
    "@ :// gist gists pastebin paste webhook webhooks server endpoint address url bucket link"
    " image query reply answer response",
)
PRONOUN = re.compile(
    r"-?(?:\s*(?:them|it|this|these|those|everything|all\s+of\s+(?:it|them))|les)\b"
)
