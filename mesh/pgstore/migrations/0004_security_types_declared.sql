-- The security types are declared by the store's user (auth declares its
-- own and passes them as Options.GatedTypes, which Open adds to
-- public.security_fold_types), not named by the store. Migration 0002 named
-- four; they are added to the table here, so a database that folded them
-- keeps folding them, and the function consults the table alone.
INSERT INTO public.security_fold_types (node_type)
SELECT t FROM unnest(ARRAY['role', 'groupmembership', 'accessassignment', 'partitionaccesspolicy']) AS t
WHERE EXISTS (SELECT 1 FROM public.security_fold WHERE lower(node_type) = t)
ON CONFLICT DO NOTHING;

CREATE OR REPLACE FUNCTION public.mesh_is_security_type(candidate text) RETURNS boolean
LANGUAGE sql STABLE AS $fn$
    SELECT candidate IS NOT NULL
        AND EXISTS (SELECT 1 FROM public.security_fold_types t WHERE t.node_type = lower(candidate))
$fn$;
