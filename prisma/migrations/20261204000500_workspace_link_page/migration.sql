-- A page of a workspace's links (newest first, or oldest first for a `last` page), for the
-- workspaces listed, read by walking workspace_link_workspace_id_created_at_id_idx from the
-- cursor: a page costs what it returns at any number of links. The plan does not depend on the
-- table's statistics: a workspace that has just received thousands of links, before any ANALYZE,
-- looks to the planner like one of a few rows, and it would read all of them and sort them
-- (a bitmap scan of the workspace's links) rather than walk the index. Sorting is switched off
-- inside this function, so the index walk is the only plan; a page's cursors are bounds of
-- (created_at, id), conditions of the walk itself.
CREATE FUNCTION "workspace_link_page"(
  p_workspace_ids text[], p_take integer, p_oldest_first boolean,
  p_older_than_at timestamptz, p_older_than_id text, p_newer_than_at timestamptz, p_newer_than_id text
) RETURNS SETOF "workspace_link" LANGUAGE plpgsql STABLE SET enable_sort = off AS $$
BEGIN
  IF p_oldest_first THEN
    RETURN QUERY SELECT l.* FROM unnest(p_workspace_ids) AS w(id) CROSS JOIN LATERAL (
      SELECT * FROM "workspace_link" AS k
       WHERE k."workspace_id" = w.id
         AND (k."created_at", k."id") < (coalesce(p_older_than_at, 'infinity'), coalesce(p_older_than_id, ''))
         AND (k."created_at", k."id") > (coalesce(p_newer_than_at, '-infinity'), coalesce(p_newer_than_id, ''))
       ORDER BY k."created_at", k."id" LIMIT p_take) AS l;
  ELSE
    RETURN QUERY SELECT l.* FROM unnest(p_workspace_ids) AS w(id) CROSS JOIN LATERAL (
      SELECT * FROM "workspace_link" AS k
       WHERE k."workspace_id" = w.id
         AND (k."created_at", k."id") < (coalesce(p_older_than_at, 'infinity'), coalesce(p_older_than_id, ''))
         AND (k."created_at", k."id") > (coalesce(p_newer_than_at, '-infinity'), coalesce(p_newer_than_id, ''))
       ORDER BY k."created_at" DESC, k."id" DESC LIMIT p_take) AS l;
  END IF;
END;
$$;
