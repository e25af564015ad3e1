"""The store, tools and MCP suites on both storage backends (``backends.memory``: on disk
and in a real PostgreSQL), by running the suites' own tests here: each test below is
imported from its module and collected again with this module's ``memory``."""

from __future__ import annotations

import backends
from test_knowledge import (  # noqa: F401
    test_bad_update_modes_and_sections_are_refused,
    test_file_cap_refuses_a_section_that_would_overflow,
    test_patch_skips_only_whole_lines_already_present,
    test_render_excludes_observations_and_respects_the_token_cap,
    test_save_refuses_non_strings_and_bad_types,
    test_section_cap_compresses_before_refusing,
    test_tags_accept_a_comma_separated_string,
    test_think_blocks_and_sibling_headings_are_sanitised,
    test_update_replace_patch_and_append_alias,
)
from test_notebook import (  # noqa: F401
    test_entry_text_cannot_break_the_file,
    test_render_is_the_prompt_block,
    test_system_and_cpp_entries_do_not_count,
    test_update_creates_then_updates,
)
from test_tools import (  # noqa: F401
    test_a_window_that_ends_before_it_starts_is_refused,
    test_an_internal_error_becomes_a_structured_error,
    test_arguments_as_a_json_string_work,
    test_bad_calls_get_sentences_not_exceptions,
    test_each_tool_refuses_with_a_reason_and_changes_nothing,
    test_each_tool_succeeds_and_names_its_store,
    test_memory_delete_removes_observations_by_id,
    test_memory_search_with_an_empty_query_is_a_listing,
    test_reading_a_card_touches_it,
    test_recall_activity_lists_searches_and_gets,
    test_results_report_the_knowledge_store_path,
    tools,
)
from test_workspace import (  # noqa: F401
    test_compression_hooks_get_the_line_without_its_bullet,
    test_the_working_state_does_not_use_the_agent_notebook_slots,
)

backend = backends.backend  # every test here runs on disk and in PostgreSQL
memory = backends.memory
