-- Partition schemas: one schema per mesh partition, holding mesh_nodes and
-- the satellite tables, all of one shape, each announcing its row changes on
-- the mesh_node_changes channel.

-- Every partition schema, registered when it is created. The global
-- satellite schema system_access is deliberately not listed.
CREATE TABLE IF NOT EXISTS public.searchable_schemas (
    schema_name TEXT PRIMARY KEY
);

-- Which users may read which partition.
CREATE TABLE IF NOT EXISTS public.partition_access (
    user_id   TEXT NOT NULL,
    partition TEXT NOT NULL,
    PRIMARY KEY (user_id, partition)
);
CREATE INDEX IF NOT EXISTS partition_access_partition_idx ON public.partition_access (partition);

-- Announces a row change as {"path", "op", "node_type"}. The node type lets
-- a listener in another process tell whether the change can matter to a
-- query without re-running it. Updates that change nothing a reader sees are
-- not announced. A change of path is announced as the old path's DELETE and
-- the new path's INSERT, so no listener keeps a row that moved away.
-- Path and node type are bounded by table constraints, which keeps the
-- payload under NOTIFY's 8000-byte limit.
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
    ELSIF TG_OP = 'UPDATE' THEN
        PERFORM pg_notify('mesh_node_changes',
            json_build_object('path', NEW.path, 'op', 'UPDATE', 'node_type', NEW.node_type)::text);
    END IF;
    RETURN NULL;
END
$fn$;

-- Creates (if missing) the schema and its node tables, indexes and notify
-- triggers. Every name is quoted with %I; nothing is concatenated.
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
    END LOOP;
END
$fn$;

-- Creates a partition schema on first use and registers it as searchable.
-- schema_name is the partition name lower-cased by the caller. Concurrent
-- callers for one name are serialised by a transaction-scoped advisory lock,
-- waited for at most lock_wait; later callers find the schema and return.
CREATE OR REPLACE FUNCTION public.ensure_partition_schema(schema_name text, lock_wait interval DEFAULT '30 seconds')
RETURNS text
LANGUAGE plpgsql AS $fn$
DECLARE
    previous_timeout text := current_setting('lock_timeout');
BEGIN
    IF schema_name IS NULL OR schema_name = '' OR octet_length(schema_name) > 63
       OR schema_name LIKE 'pg\_%' OR schema_name LIKE '\_%' OR position('/' IN schema_name) > 0
       OR schema_name IN ('public', 'information_schema', 'system_access') THEN
        RAISE EXCEPTION 'invalid partition schema name %', quote_literal(coalesce(schema_name, '(null)'))
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM public.searchable_schemas s WHERE s.schema_name = ensure_partition_schema.schema_name) THEN
        RETURN schema_name;
    END IF;
    -- 1835364200 is 'mesh' in ASCII: the class of pgstore's partition locks.
    PERFORM set_config('lock_timeout', (extract(epoch FROM lock_wait) * 1000)::bigint::text, true);
    PERFORM pg_advisory_xact_lock(1835364200, hashtext(schema_name));
    PERFORM set_config('lock_timeout', previous_timeout, true);
    IF NOT EXISTS (SELECT 1 FROM public.searchable_schemas s WHERE s.schema_name = ensure_partition_schema.schema_name) THEN
        PERFORM public.mesh_create_node_tables(schema_name);
        INSERT INTO public.searchable_schemas (schema_name) VALUES (ensure_partition_schema.schema_name);
    END IF;
    RETURN schema_name;
END
$fn$;

-- The global satellite schema (_Access routes here): same tables, not searchable.
SELECT public.mesh_create_node_tables('system_access');
