-- The security version is the counter and a token (mesh.SecurityVersion):
-- every update of the version row draws a fresh random token in the same
-- statement, so in the writing transaction. A counter alone recurs with
-- other contents: a database restored from a dump (whose rows are copied
-- in, not updated: the token comes back with its counter) or a standby
-- that lags, then written again, gives the same counter to another set;
-- a reader that kept a decision at that counter would answer from it.
-- The token is a BEFORE UPDATE trigger on the row, not a change to the
-- functions that bump it, so that no way of moving the counter can keep
-- the old token.
ALTER TABLE public.security_fold_version
    ADD COLUMN IF NOT EXISTS token uuid NOT NULL DEFAULT gen_random_uuid();

CREATE OR REPLACE FUNCTION public.security_fold_version_token() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    NEW.token := gen_random_uuid();
    RETURN NEW;
END
$fn$;

DROP TRIGGER IF EXISTS security_fold_version_token ON public.security_fold_version;
CREATE TRIGGER security_fold_version_token
    BEFORE UPDATE ON public.security_fold_version
    FOR EACH ROW EXECUTE FUNCTION public.security_fold_version_token();
