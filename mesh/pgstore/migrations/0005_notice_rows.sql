-- A change notice carries the written row when it fits: a live query the
-- notice concerns then patches its result from the notice instead of
-- re-reading the path (one database round trip less per frame). The row
-- is left out when the payload would pass 7,900 bytes (NOTIFY refuses
-- payloads of 8,000 and more); a reader then re-reads the path, as before.
-- Every notice also carries a number of its own ('n'), so PostgreSQL never
-- folds two notices of one transaction with equal payloads into one (it
-- delivers only the first): a reader that applies rows must see every
-- change of a path, a delete between two equal rows included. Readers that
-- predate this ignore the extra fields. Everything else is as in 0002.
CREATE SEQUENCE IF NOT EXISTS public.mesh_notice_numbers;

CREATE OR REPLACE FUNCTION public.mesh_notify_row(op text, node_type text, r record) RETURNS text
LANGUAGE plpgsql AS $fn$
DECLARE
    num bigint := nextval('public.mesh_notice_numbers');
    small text;
    full_payload text;
BEGIN
    small := json_build_object('path', r.path, 'op', op, 'node_type', node_type,
        'n', num)::text;
    full_payload := json_build_object('path', r.path, 'op', op, 'node_type', node_type,
        'n', num,
        'row', json_build_object('namespace', r.namespace, 'id', r.id, 'path', r.path, 'name', r.name,
            'node_type', r.node_type, 'main_node', r.main_node, 'content', r.content, 'content_null', r.content IS NULL, 'version', r.version,
            'state', r.state, 'last_modified', r.last_modified))::text;
    IF octet_length(full_payload) <= 7900 THEN -- NOTIFY's limit is 8000
        RETURN full_payload;
    END IF;
    RETURN small;
END
$fn$;

CREATE OR REPLACE FUNCTION public.mesh_notify_change() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP = 'UPDATE'
       AND OLD.path      IS NOT DISTINCT FROM NEW.path
       AND OLD.content   IS NOT DISTINCT FROM NEW.content
       AND OLD.name      IS NOT DISTINCT FROM NEW.name
       AND OLD.node_type IS NOT DISTINCT FROM NEW.node_type
       AND OLD.state     IS NOT DISTINCT FROM NEW.state
       AND OLD.version   IS NOT DISTINCT FROM NEW.version
       AND OLD.main_node IS NOT DISTINCT FROM NEW.main_node THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.path IS DISTINCT FROM NEW.path) THEN
        PERFORM pg_notify('mesh_node_changes',
            json_build_object('path', OLD.path, 'op', 'DELETE', 'node_type', OLD.node_type,
                'n', nextval('public.mesh_notice_numbers'))::text);
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND OLD.path IS DISTINCT FROM NEW.path) THEN
        PERFORM pg_notify('mesh_node_changes', public.mesh_notify_row('INSERT', NEW.node_type, NEW));
    ELSIF TG_OP = 'UPDATE' AND OLD.node_type IS DISTINCT FROM NEW.node_type THEN
        PERFORM pg_notify('mesh_node_changes', public.mesh_notify_row('UPDATE', NULL, NEW));
    ELSIF TG_OP = 'UPDATE' THEN
        PERFORM pg_notify('mesh_node_changes', public.mesh_notify_row('UPDATE', NEW.node_type, NEW));
    END IF;
    RETURN NULL;
END
$fn$;
