-- Every function of the store runs with its own search_path, not the
-- caller's. Without it, a trigger resolved its unqualified names (pg_notify,
-- json_build_object, nextval, the = and || operators...) through the
-- writing session's search_path: a session, or a role's default, that put
-- a schema of its own before pg_catalog had the store's triggers call that
-- schema's functions and operators (a pg_notify that swallows notices, an
-- = that lets any type into the security fold). Every store object is
-- named with its schema in these functions, so the path holds pg_catalog
-- alone (pg_temp last, so a temporary object never comes first): public is
-- left out because where untrusted roles may create in it (PostgreSQL 14
-- and older by default) an overload there can still be chosen, e.g. a
-- public.nextval(text) wins over pg_catalog.nextval(regclass) for a
-- string literal.
--
-- The list is every function 0001-0007 create (pg_proc in the store's
-- schemas) but two: mesh_fold_ascii and mesh_is_security_type are SQL
-- functions called per row, which a SET clause would keep from being
-- inlined and make save and restore the setting on every call; their bodies
-- name everything with its schema instead (mesh_is_security_type's = is
-- made pg_catalog's below).
-- TestEveryFunctionOfTheStoreRunsWithAPinnedSearchPath fails for any other
-- without the pin. CREATE OR REPLACE FUNCTION drops a SET clause the
-- function had, so a later migration that redefines one must say
-- SET search_path = pg_catalog, pg_temp itself.
ALTER FUNCTION public.ensure_global_schema(text, interval) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION public.ensure_partition_schema(text, interval) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION public.mesh_add_folded_keys(text, text, boolean) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION public.mesh_create_node_tables(text) SET search_path = pg_catalog, pg_temp;
CREATE OR REPLACE FUNCTION public.mesh_is_security_type(candidate text) RETURNS boolean
LANGUAGE sql STABLE AS $fn$
    SELECT candidate IS NOT NULL
        AND EXISTS (SELECT 1 FROM public.security_fold_types t
                    WHERE t.node_type OPERATOR(pg_catalog.=) public.mesh_fold_ascii(candidate))
$fn$;
ALTER FUNCTION public.mesh_key_indexes() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION public.mesh_note_table_type() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION public.mesh_notify_change() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION public.mesh_notify_row(text, text, record) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION public.mesh_security_fold() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION public.mesh_stale_keys() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION public.security_fold_add_types(text[]) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION public.security_fold_backfill(text[]) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION public.security_fold_version_token() SET search_path = pg_catalog, pg_temp;
