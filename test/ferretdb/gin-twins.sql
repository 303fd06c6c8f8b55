-- For measuring on FerretDB's PostgreSQL backend (ferretdb -postgresql-url):
-- run once in the PostgreSQL database FerretDB uses, before FerretDB
-- creates its collections.
--
-- FerretDB 1.24 sends a filter {f: v} to PostgreSQL as (_jsonb -> 'f') @> v,
-- a containment, and builds each MongoDB index as a btree on (_jsonb -> 'f'),
-- which serves = and ranges but not @>: every find reads the whole table.
-- This trigger gives every such index a GIN twin on the same expressions,
-- which does serve @>, so a find by an indexed field (the _id included) reads
-- the matching rows only. Sorting and ranges still use the btree or none.
CREATE OR REPLACE FUNCTION ferretdb_gin_twin() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE
	r record;
	def text;
BEGIN
	FOR r IN SELECT objid FROM pg_event_trigger_ddl_commands() WHERE command_tag = 'CREATE INDEX' LOOP
		def := pg_get_indexdef(r.objid);
		-- The twin itself is a GIN index, so it does not come back here.
		IF def LIKE '% USING btree (%_jsonb -> %' THEN
			EXECUTE format('CREATE INDEX %I ON %s USING gin %s',
				'gin_' || r.objid,
				(SELECT indrelid::regclass FROM pg_index WHERE indexrelid = r.objid),
				replace(substring(def FROM ' USING btree (\(.*\))$'), ' DESC', ''));
		END IF;
	END LOOP;
END $$;

DROP EVENT TRIGGER IF EXISTS ferretdb_gin_twin;
CREATE EVENT TRIGGER ferretdb_gin_twin ON ddl_command_end WHEN TAG IN ('CREATE INDEX')
	EXECUTE FUNCTION ferretdb_gin_twin();
