-- Gating folds type names as mesh.FoldName does: ASCII letters only,
-- whatever the database's locale. lower() follows the locale: in a Turkish
-- or Azeri one it folds 'I' to a dotless 'ı', so a node of type "invoice"
-- escaped the fold of a gated "Invoice"; in ICU and most UTF-8 locales it
-- folds the Kelvin sign 'K' (U+212A) to 'k', so a node of type "Key" with
-- it was folded as "key", which mesh.FoldName keeps apart.
CREATE OR REPLACE FUNCTION public.mesh_fold_ascii(x text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
    SELECT pg_catalog.translate(x, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')
$fn$;

-- Folded types: the ASCII fold of each. A name lower() folded beyond ASCII
-- cannot be told back; its row is kept (the stores that gave it add the
-- ASCII fold on their next Open), and a lower()-folded name has no ASCII
-- capital, so it meets the new check.
ALTER TABLE public.security_fold_types DROP CONSTRAINT IF EXISTS security_fold_types_lower;
ALTER TABLE public.security_fold_types ADD CONSTRAINT security_fold_types_ascii_folded
    CHECK (node_type = public.mesh_fold_ascii(node_type) AND btrim(node_type) <> '');

CREATE OR REPLACE FUNCTION public.mesh_is_security_type(candidate text) RETURNS boolean
LANGUAGE sql STABLE AS $fn$
    SELECT candidate IS NOT NULL
        AND EXISTS (SELECT 1 FROM public.security_fold_types t WHERE t.node_type = public.mesh_fold_ascii(candidate))
$fn$;

-- As in 0002, comparing ASCII folds.
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
                           ELSE public.mesh_fold_ascii(r.node_type) = ANY ($1) END
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

-- As in 0002, folding the given types as ASCII.
CREATE OR REPLACE FUNCTION public.security_fold_add_types(types text[]) RETURNS bigint
LANGUAGE plpgsql AS $fn$
DECLARE
    missing text[];
BEGIN
    SELECT coalesce(array_agg(DISTINCT public.mesh_fold_ascii(x)), '{}') INTO missing
    FROM unnest(types) AS x
    WHERE NOT EXISTS (SELECT 1 FROM public.security_fold_types t WHERE t.node_type = public.mesh_fold_ascii(x));
    IF cardinality(missing) = 0 THEN
        RETURN 0;
    END IF;
    LOCK TABLE public.security_fold_types IN ACCESS EXCLUSIVE MODE;
    INSERT INTO public.security_fold_types (node_type) SELECT unnest(missing) ON CONFLICT DO NOTHING;
    RETURN public.security_fold_backfill(missing);
END
$fn$;

-- A type lower() folded out of ASCII is gated under its ASCII fold from
-- here on, before anything leaves the fold: in a Turkish or Azeri locale
-- lower() folds the ASCII 'I' (and only it) to a dotless 'ı', so a stored
-- 'ınstance' was the fold of "Instance", whose ASCII fold is 'instance'.
-- Without this, "Instance" nodes would leave the fold until a store's next
-- Open added the type again: writes to them would not move the version. A
-- name that truly had a dotless 'ı' gains a second gated type (more
-- version moves, never fewer).
INSERT INTO public.security_fold_types (node_type)
SELECT DISTINCT pg_catalog.translate(t.node_type, 'ı', 'i')
FROM public.security_fold_types t
WHERE pg_catalog.strpos(t.node_type, 'ı') > 0
ON CONFLICT DO NOTHING;

-- The fold now holds what the ASCII fold gates: rows lower() let in and it
-- does not go, rows lower() kept out and it gates come in; the version
-- moves if anything did. Writers wait: the types table is locked as
-- security_fold_add_types locks it.
LOCK TABLE public.security_fold_types IN ACCESS EXCLUSIVE MODE;
WITH gone AS (
    DELETE FROM public.security_fold f WHERE NOT public.mesh_is_security_type(f.node_type) RETURNING 1
)
UPDATE public.security_fold_version SET version = version + 1 WHERE EXISTS (SELECT 1 FROM gone);
SELECT public.security_fold_backfill(NULL);
