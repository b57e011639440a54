-- What the planner assumes of a page of links (workspace_link_page), so that a statement reading
-- one is planned for a page, not for a thousand links:
-- - ROWS 20: a function returning a set is assumed to return 1,000 rows unless it says otherwise,
--   and a statement that reads a page of 20 was planned for 1,000: its joins to what the links
--   name, and its sorts, sized for 50 times the rows there are.
-- - plan_cache_mode = force_generic_plan: PL/pgSQL plans a statement with the call's values
--   (a custom plan) and keeps one generic plan only when it looks no dearer; for a page whose
--   size is a parameter (LIMIT p_take) it never does, so every call planned the walk anew (half
--   of the function's time on the embedded database). The walk's plan does not depend on the
--   values — sorting is off, the index walk is the only plan — so one plan serves every call.
ALTER FUNCTION "workspace_link_page"(text[], integer, boolean, timestamptz, text, timestamptz, text)
  ROWS 20 SET plan_cache_mode = force_generic_plan;
