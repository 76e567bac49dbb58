-- The security fold: every node of a security type, from every node table of
-- every partition schema and of the global satellite schemas, kept in one
-- public table by triggers in the writing transaction, so the access fold
-- reads one table instead of fanning out. Also: a write that changes a
-- node's type is announced without a type, and global satellite schemas
-- are created on demand.

-- A write that changes a node's type is announced with node_type null: a
-- reader constrained to the old type must drop the node and one constrained
-- to the new type must add it, and null tells every reader to re-read.
-- (Naming both types would let the payload of the longest row exceed
-- NOTIFY's 8000-byte limit.) Everything else is as in 0001.
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
            json_build_object('path', OLD.path, 'op', 'DELETE', 'node_type', OLD.node_type)::text);
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND OLD.path IS DISTINCT FROM NEW.path) THEN
        PERFORM pg_notify('mesh_node_changes',
            json_build_object('path', NEW.path, 'op', 'INSERT', 'node_type', NEW.node_type)::text);
    ELSIF TG_OP = 'UPDATE' AND OLD.node_type IS DISTINCT FROM NEW.node_type THEN
        PERFORM pg_notify('mesh_node_changes',
            json_build_object('path', NEW.path, 'op', 'UPDATE', 'node_type', NULL)::text);
    ELSIF TG_OP = 'UPDATE' THEN
        PERFORM pg_notify('mesh_node_changes',
            json_build_object('path', NEW.path, 'op', 'UPDATE', 'node_type', NEW.node_type)::text);
    END IF;
    RETURN NULL;
END
$fn$;

-- Node types folded besides the built-in security types (gated types),
-- lower-cased. Adding one goes through security_fold_add_types, which
-- backfills it.
CREATE TABLE IF NOT EXISTS public.security_fold_types (
    node_type TEXT PRIMARY KEY,
    CONSTRAINT security_fold_types_lower CHECK (node_type = lower(node_type) AND btrim(node_type) <> '')
);

-- A copy of every node of a security type, keyed by where it is stored.
CREATE TABLE IF NOT EXISTS public.security_fold (
    schema_name   TEXT NOT NULL,
    table_name    TEXT NOT NULL,
    namespace     TEXT NOT NULL,
    id            TEXT NOT NULL,
    path          TEXT NOT NULL,
    name          TEXT,
    node_type     TEXT,
    main_node     TEXT,
    content       JSONB,
    version       BIGINT NOT NULL,
    state         SMALLINT NOT NULL,
    last_modified TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (schema_name, table_name, namespace, id)
);

-- One row: bumped by every write that changes the fold, in the same
-- transaction, so a reader that sees a version sees exactly its rows.
CREATE TABLE IF NOT EXISTS public.security_fold_version (
    singleton BOOLEAN PRIMARY KEY DEFAULT true,
    version   BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT security_fold_version_one_row CHECK (singleton)
);
INSERT INTO public.security_fold_version (singleton, version) VALUES (true, 0) ON CONFLICT DO NOTHING;

-- Whether nodes of type candidate belong in the fold (compared without case).
CREATE OR REPLACE FUNCTION public.mesh_is_security_type(candidate text) RETURNS boolean
LANGUAGE sql STABLE AS $fn$
    SELECT candidate IS NOT NULL AND (
        lower(candidate) IN ('role', 'groupmembership', 'accessassignment', 'partitionaccesspolicy')
        OR EXISTS (SELECT 1 FROM public.security_fold_types t WHERE t.node_type = lower(candidate)))
$fn$;

-- Keeps public.security_fold equal to the security-typed rows of the table
-- it fires on: a row entering the set (insert, or an update into a security
-- type) is copied, one leaving it (delete, or an update out of the set) is
-- removed, one changing inside it is refreshed; each bumps the version.
CREATE OR REPLACE FUNCTION public.mesh_security_fold() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
    was_in boolean := false;
    now_in boolean := false;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        was_in := public.mesh_is_security_type(OLD.node_type);
    END IF;
    IF TG_OP <> 'DELETE' THEN
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

-- As in 0001, plus the security fold trigger on every node table.
CREATE OR REPLACE FUNCTION public.mesh_create_node_tables(schema_name text) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    t text;
BEGIN
    EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I', schema_name);
    FOREACH t IN ARRAY ARRAY['mesh_nodes', 'access', 'notifications', 'threads', 'activities'] LOOP
        EXECUTE format($ddl$
            CREATE TABLE IF NOT EXISTS %1$I.%2$I (
                namespace     TEXT NOT NULL DEFAULT '',
                id            TEXT NOT NULL,
                path          TEXT GENERATED ALWAYS AS (
                                  CASE WHEN namespace = '' THEN id ELSE namespace || '/' || id END) STORED,
                name          TEXT,
                node_type     TEXT,
                main_node     TEXT,
                content       JSONB,
                version       BIGINT NOT NULL DEFAULT 0,
                state         SMALLINT NOT NULL DEFAULT 0,
                last_modified TIMESTAMPTZ NOT NULL DEFAULT now(),
                PRIMARY KEY (namespace, id),
                CONSTRAINT %3$I CHECK (id <> ''),
                CONSTRAINT %4$I CHECK (octet_length(path) <= 1024),
                CONSTRAINT %5$I CHECK (octet_length(node_type) <= 256)
            )$ddl$,
            schema_name, t, t || '_id_not_empty', t || '_path_bounded', t || '_node_type_bounded');
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I.%I (path)', t || '_path_idx', schema_name, t);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I.%I (path text_pattern_ops)', t || '_path_prefix_idx', schema_name, t);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I.%I (namespace)', t || '_namespace_idx', schema_name, t);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I.%I (node_type)', t || '_node_type_idx', schema_name, t);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I.%I (main_node)', t || '_main_node_idx', schema_name, t);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I.%I (last_modified DESC)', t || '_last_modified_idx', schema_name, t);
        IF NOT EXISTS (
            SELECT 1 FROM pg_catalog.pg_trigger
            WHERE tgrelid = format('%I.%I', schema_name, t)::regclass AND tgname = t || '_notify'
        ) THEN
            EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE OR DELETE ON %I.%I '
                           'FOR EACH ROW EXECUTE FUNCTION public.mesh_notify_change()',
                           t || '_notify', schema_name, t);
        END IF;
        IF NOT EXISTS (
            SELECT 1 FROM pg_catalog.pg_trigger
            WHERE tgrelid = format('%I.%I', schema_name, t)::regclass AND tgname = t || '_security_fold'
        ) THEN
            EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE OR DELETE ON %I.%I '
                           'FOR EACH ROW EXECUTE FUNCTION public.mesh_security_fold()',
                           t || '_security_fold', schema_name, t);
        END IF;
    END LOOP;
END
$fn$;

-- Copies into the fold the rows of every node schema whose type is in
-- only_types (lower-cased), or of any security type when only_types is
-- null, and bumps the version if it copied any. Node schemas are found by
-- their notify trigger, so partition and global satellite schemas alike are
-- covered. Returns the number of rows copied.
CREATE OR REPLACE FUNCTION public.security_fold_backfill(only_types text[] DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql AS $fn$
DECLARE
    s text;
    t text;
    copied bigint := 0;
    step bigint;
BEGIN
    FOR s IN
        SELECT ns.nspname::text
        FROM pg_catalog.pg_trigger tg
        JOIN pg_catalog.pg_class c ON c.oid = tg.tgrelid
        JOIN pg_catalog.pg_namespace ns ON ns.oid = c.relnamespace
        WHERE c.relname = 'mesh_nodes' AND tg.tgname = 'mesh_nodes_notify'
        ORDER BY 1
    LOOP
        FOREACH t IN ARRAY ARRAY['mesh_nodes', 'access', 'notifications', 'threads', 'activities'] LOOP
            EXECUTE format($q$
                INSERT INTO public.security_fold AS f (schema_name, table_name, namespace, id, path, name,
                                                       node_type, main_node, content, version, state, last_modified)
                SELECT %1$L, %2$L, r.namespace, r.id, r.path, r.name, r.node_type, r.main_node, r.content,
                       r.version, r.state, r.last_modified
                FROM %1$I.%2$I r
                WHERE CASE WHEN $1 IS NULL THEN public.mesh_is_security_type(r.node_type)
                           ELSE lower(r.node_type) = ANY ($1) END
                ON CONFLICT (schema_name, table_name, namespace, id) DO UPDATE SET
                    path = EXCLUDED.path, name = EXCLUDED.name, node_type = EXCLUDED.node_type,
                    main_node = EXCLUDED.main_node, content = EXCLUDED.content, version = EXCLUDED.version,
                    state = EXCLUDED.state, last_modified = EXCLUDED.last_modified
                $q$, s, t) USING only_types;
            GET DIAGNOSTICS step = ROW_COUNT;
            copied := copied + step;
        END LOOP;
    END LOOP;
    IF copied > 0 THEN
        UPDATE public.security_fold_version SET version = version + 1;
    END IF;
    RETURN copied;
END
$fn$;

-- Adds gated node types to the fold and backfills their existing rows;
-- types already present change nothing. Returns the number of rows copied.
-- Writers read security_fold_types in their triggers, so the exclusive lock
-- waits for writes in flight and holds new ones back until the new types
-- and their backfill commit together: no write of a newly gated type is
-- missed. The caller bounds the wait with lock_timeout.
CREATE OR REPLACE FUNCTION public.security_fold_add_types(types text[]) RETURNS bigint
LANGUAGE plpgsql AS $fn$
DECLARE
    missing text[];
BEGIN
    SELECT coalesce(array_agg(DISTINCT lower(x)), '{}') INTO missing
    FROM unnest(types) AS x
    WHERE NOT EXISTS (SELECT 1 FROM public.security_fold_types t WHERE t.node_type = lower(x));
    IF cardinality(missing) = 0 THEN
        RETURN 0;
    END IF;
    LOCK TABLE public.security_fold_types IN ACCESS EXCLUSIVE MODE;
    INSERT INTO public.security_fold_types (node_type) SELECT unnest(missing) ON CONFLICT DO NOTHING;
    RETURN public.security_fold_backfill(missing);
END
$fn$;

-- Creates (if missing) a global satellite schema: the node tables of a
-- partition, but not registered as searchable, so no fan-out reads it.
-- Serialised with partition creation by the same advisory lock class.
CREATE OR REPLACE FUNCTION public.ensure_global_schema(schema_name text, lock_wait interval DEFAULT '30 seconds')
RETURNS text
LANGUAGE plpgsql AS $fn$
DECLARE
    previous_timeout text := current_setting('lock_timeout');
BEGIN
    IF schema_name IS NULL OR schema_name = '' OR octet_length(schema_name) > 63
       OR schema_name LIKE 'pg\_%' OR position('/' IN schema_name) > 0
       OR schema_name IN ('public', 'information_schema') THEN
        RAISE EXCEPTION 'invalid global satellite schema name %', quote_literal(coalesce(schema_name, '(null)'))
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF to_regclass(format('%I.%I', schema_name, 'mesh_nodes')) IS NOT NULL THEN
        RETURN schema_name;
    END IF;
    PERFORM set_config('lock_timeout', (extract(epoch FROM lock_wait) * 1000)::bigint::text, true);
    PERFORM pg_advisory_xact_lock(1835364200, hashtext(schema_name));
    PERFORM set_config('lock_timeout', previous_timeout, true);
    PERFORM public.mesh_create_node_tables(schema_name);
    RETURN schema_name;
END
$fn$;

-- Existing node schemas get the fold trigger (creating a trigger waits for
-- the writers in flight on its table and holds new ones until this commits),
-- then the fold is backfilled from what they hold.
SELECT public.mesh_create_node_tables(s.schema_name) FROM public.searchable_schemas s ORDER BY s.schema_name;
SELECT public.mesh_create_node_tables('system_access');
SELECT public.security_fold_backfill(NULL);
