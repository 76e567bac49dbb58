-- An update that keeps a node's type asks once whether the type is gated,
-- not twice: the answer for NEW.node_type is the one just given for the
-- same text. mesh_is_security_type depends on its argument and on
-- public.security_fold_types alone, which cannot change in between:
-- adding a type locks the table ACCESS EXCLUSIVE, and the first call's
-- read holds a share lock on it to the writer's end. Each call is a
-- lookup in that table (the function's subquery keeps it from being
-- inlined), and most updates keep the type. Everything else is as in
-- 0002, pinned as 0008 pins it (CREATE OR REPLACE drops a SET clause).
CREATE OR REPLACE FUNCTION public.mesh_security_fold() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    was_in boolean := false;
    now_in boolean := false;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        was_in := public.mesh_is_security_type(OLD.node_type);
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.node_type IS NOT DISTINCT FROM NEW.node_type THEN
        now_in := was_in;
    ELSIF TG_OP <> 'DELETE' THEN
        now_in := public.mesh_is_security_type(NEW.node_type);
    END IF;
    IF NOT (was_in OR now_in) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' AND was_in AND now_in AND OLD IS NOT DISTINCT FROM NEW THEN
        RETURN NULL;
    END IF;
    IF was_in AND (NOT now_in OR OLD.namespace <> NEW.namespace OR OLD.id <> NEW.id) THEN
        DELETE FROM public.security_fold f
        WHERE f.schema_name = TG_TABLE_SCHEMA AND f.table_name = TG_TABLE_NAME
          AND f.namespace = OLD.namespace AND f.id = OLD.id;
    END IF;
    IF now_in THEN
        INSERT INTO public.security_fold AS f (schema_name, table_name, namespace, id, path, name, node_type,
                                               main_node, content, version, state, last_modified)
        VALUES (TG_TABLE_SCHEMA, TG_TABLE_NAME, NEW.namespace, NEW.id, NEW.path, NEW.name, NEW.node_type,
                NEW.main_node, NEW.content, NEW.version, NEW.state, NEW.last_modified)
        ON CONFLICT (schema_name, table_name, namespace, id) DO UPDATE SET
            path = EXCLUDED.path, name = EXCLUDED.name, node_type = EXCLUDED.node_type,
            main_node = EXCLUDED.main_node, content = EXCLUDED.content, version = EXCLUDED.version,
            state = EXCLUDED.state, last_modified = EXCLUDED.last_modified;
    END IF;
    UPDATE public.security_fold_version SET version = version + 1;
    RETURN NULL;
END
$fn$;
