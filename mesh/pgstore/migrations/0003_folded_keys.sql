-- Folded keys and type routing.
--
-- Every node table gets, beside each text field mesh matches without case,
-- a key column holding the field folded by mesh's own folding (computed in
-- Go by the writer; collated "C" so a B-tree serves equality and prefix
-- ranges). A key is NULL until filled: the store's reads treat a NULL key
-- by the old spelled-out pattern, so rows written before this migration
-- stay visible while pgstore.BackfillKeys fills them in batches and builds
-- the key indexes CONCURRENTLY. Adding a nullable column without a default
-- changes only the catalog: no table is rewritten or scanned here.
--
-- public.mesh_table_types records, per node table name, every node type
-- (as written) any schema's table of that name has held, so a query whose
-- node types are known reads only the tables that can hold them.
--
-- Whoever redefines public.mesh_create_node_tables later must keep calling
-- public.mesh_add_folded_keys for each table.

CREATE TABLE IF NOT EXISTS public.mesh_table_types (
    table_name TEXT NOT NULL,
    node_type  TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (table_name, node_type)
);

-- Records the type of a written row ('' for none, as mesh reads it). The
-- registry only grows: a table once holding a type is read for it.
CREATE OR REPLACE FUNCTION public.mesh_note_table_type() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM public.mesh_table_types t
                   WHERE t.table_name = TG_TABLE_NAME AND t.node_type = coalesce(NEW.node_type, '')) THEN
        INSERT INTO public.mesh_table_types (table_name, node_type)
        VALUES (TG_TABLE_NAME, coalesce(NEW.node_type, '')) ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$fn$;

-- A writer that changes a keyed field without setting its keys (one that
-- does not know them) leaves keys that no longer fold the row: they are
-- cleared, and the row reads by the spelled-out pattern until the backfill
-- refills them. A change of case only, after which the keys are rightly
-- the same, clears them too: that costs the row its index until the next
-- backfill, never an answer.
CREATE OR REPLACE FUNCTION public.mesh_stale_keys() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    IF (NEW.namespace, NEW.id, NEW.name, NEW.node_type, NEW.main_node)
           IS DISTINCT FROM (OLD.namespace, OLD.id, OLD.name, OLD.node_type, OLD.main_node)
       AND (NEW.ns_key, NEW.id_key, NEW.path_key, NEW.name_key, NEW.type_key, NEW.main_key)
           IS NOT DISTINCT FROM (OLD.ns_key, OLD.id_key, OLD.path_key, OLD.name_key, OLD.type_key, OLD.main_key) THEN
        NEW.ns_key := NULL; NEW.id_key := NULL; NEW.path_key := NULL;
        NEW.name_key := NULL; NEW.type_key := NULL; NEW.main_key := NULL;
    END IF;
    RETURN NEW;
END
$fn$;

-- The key indexes of one node table, as (name suffix, columns).
CREATE OR REPLACE FUNCTION public.mesh_key_indexes() RETURNS TABLE (suffix text, columns text)
LANGUAGE sql IMMUTABLE AS $fn$
    VALUES ('_path_key_idx', 'path_key'),
           ('_ns_type_key_idx', 'ns_key, type_key'),
           ('_type_key_idx', 'type_key'),
           ('_main_key_idx', 'main_key'),
           ('_name_key_idx', 'name_key')
$fn$;

-- Adds the key columns and triggers to one node table (each step only if
-- missing) and records the node types it holds. With with_indexes, or when
-- the table is empty, it also builds the key indexes; a table with rows
-- gets them CONCURRENTLY from pgstore.BackfillKeys.
CREATE OR REPLACE FUNCTION public.mesh_add_folded_keys(schema_name text, table_name text, with_indexes boolean)
RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    ix record;
BEGIN
    EXECUTE format('ALTER TABLE %I.%I ADD COLUMN IF NOT EXISTS ns_key TEXT COLLATE "C", '
                   'ADD COLUMN IF NOT EXISTS id_key TEXT COLLATE "C", '
                   'ADD COLUMN IF NOT EXISTS path_key TEXT COLLATE "C", '
                   'ADD COLUMN IF NOT EXISTS name_key TEXT COLLATE "C", '
                   'ADD COLUMN IF NOT EXISTS type_key TEXT COLLATE "C", '
                   'ADD COLUMN IF NOT EXISTS main_key TEXT COLLATE "C"', schema_name, table_name);
    -- A row's keys are all set or all NULL (a read tells the two kinds
    -- apart by path_key alone). NOT VALID: the new columns are NULL on
    -- every existing row, so there is nothing to check, and no scan.
    IF NOT EXISTS (
        SELECT 1 FROM pg_catalog.pg_constraint
        WHERE conrelid = format('%I.%I', schema_name, table_name)::regclass AND conname = table_name || '_keys_all_or_none'
    ) THEN
        EXECUTE format('ALTER TABLE %I.%I ADD CONSTRAINT %I '
                       'CHECK (num_nulls(ns_key, id_key, path_key, name_key, type_key, main_key) IN (0, 6)) NOT VALID',
                       schema_name, table_name, table_name || '_keys_all_or_none');
    END IF;
    -- An empty table (a schema created before this migration and never
    -- written) is indexed now: there is nothing to wait for.
    EXECUTE format('SELECT $1 OR NOT EXISTS (SELECT 1 FROM %I.%I)', schema_name, table_name)
        INTO with_indexes USING with_indexes;
    IF with_indexes THEN
        FOR ix IN SELECT * FROM public.mesh_key_indexes() LOOP
            EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I.%I (%s)',
                           table_name || ix.suffix, schema_name, table_name, ix.columns);
        END LOOP;
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM pg_catalog.pg_trigger
        WHERE tgrelid = format('%I.%I', schema_name, table_name)::regclass AND tgname = table_name || '_stale_keys'
    ) THEN
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE ON %I.%I '
                       'FOR EACH ROW EXECUTE FUNCTION public.mesh_stale_keys()',
                       table_name || '_stale_keys', schema_name, table_name);
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM pg_catalog.pg_trigger
        WHERE tgrelid = format('%I.%I', schema_name, table_name)::regclass AND tgname = table_name || '_types'
    ) THEN
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE OF node_type ON %I.%I '
                       'FOR EACH ROW EXECUTE FUNCTION public.mesh_note_table_type()',
                       table_name || '_types', schema_name, table_name);
        -- The types already there, one index probe per distinct type (the
        -- node_type index), not a scan of the table.
        EXECUTE format($q$
            INSERT INTO public.mesh_table_types (table_name, node_type)
            WITH RECURSIVE types AS (
                SELECT min(node_type) AS t FROM %1$I.%2$I
                UNION ALL
                SELECT (SELECT min(node_type) FROM %1$I.%2$I WHERE node_type > types.t) FROM types WHERE types.t IS NOT NULL
            )
            SELECT %2$L, t FROM types WHERE t IS NOT NULL
            UNION
            SELECT %2$L, '' WHERE EXISTS (SELECT 1 FROM %1$I.%2$I WHERE node_type IS NULL)
            ON CONFLICT DO NOTHING$q$, schema_name, table_name);
    END IF;
END
$fn$;

-- As in 0002, plus the folded keys of every node table, without the
-- indexes on namespace, node_type, main_node and path text_pattern_ops:
-- matching goes through the keys, and every index of a table read is one
-- more relation lock (a backend has 16 fast-path slots).
CREATE OR REPLACE FUNCTION public.mesh_create_node_tables(schema_name text) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    t text;
    fresh boolean := to_regclass(format('%I.%I', schema_name, 'mesh_nodes')) IS NULL;
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
        PERFORM public.mesh_add_folded_keys(schema_name, t, fresh);
    END LOOP;
END
$fn$;

-- Existing node schemas (found by their notify trigger, as the security
-- fold's backfill finds them) get the columns and triggers; their rows'
-- keys and the key indexes come from pgstore.BackfillKeys.
SELECT public.mesh_add_folded_keys(s.nspname::text, t.name, false)
FROM (
    SELECT ns.nspname
    FROM pg_catalog.pg_trigger tg
    JOIN pg_catalog.pg_class c ON c.oid = tg.tgrelid
    JOIN pg_catalog.pg_namespace ns ON ns.oid = c.relnamespace
    WHERE c.relname = 'mesh_nodes' AND tg.tgname = 'mesh_nodes_notify'
) AS s
CROSS JOIN unnest(ARRAY['mesh_nodes', 'access', 'notifications', 'threads', 'activities']) AS t(name)
ORDER BY s.nspname, t.name;

-- The indexes the keys replace. Dropping one waits for the reads in flight
-- on its table, then takes a moment.
DO $drop$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT ns.nspname::text AS schema_name, i.relname::text AS index_name
        FROM pg_catalog.pg_class i
        JOIN pg_catalog.pg_namespace ns ON ns.oid = i.relnamespace
        JOIN pg_catalog.pg_index x ON x.indexrelid = i.oid
        JOIN pg_catalog.pg_class c ON c.oid = x.indrelid
        WHERE c.relname IN ('mesh_nodes', 'access', 'notifications', 'threads', 'activities')
          AND i.relname IN (c.relname || '_namespace_idx', c.relname || '_node_type_idx',
                            c.relname || '_main_node_idx', c.relname || '_path_prefix_idx')
        ORDER BY 1, 2
    LOOP
        EXECUTE format('DROP INDEX IF EXISTS %I.%I', r.schema_name, r.index_name);
    END LOOP;
END
$drop$;
