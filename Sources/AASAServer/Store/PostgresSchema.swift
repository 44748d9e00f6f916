import AASAPostgres

/// The tables of the PostgreSQL store (docs/replicas.md, "The table contract"), made at start
/// when missing, by any number of replicas at once (one at a time under an advisory lock).
enum PostgresSchema {
    /// The schema this server writes and reads; a store whose `aasa_schema` says more was made
    /// by a newer aasa, and this one refuses to start against it.
    static let version = 1
    static let channel = "aasa_changes"
    /// The advisory lock taken while the schema is made (an arbitrary, fixed 64-bit key).
    static let lockKey = "7160438312"

    /// The public contract (`aasa_files`, `aasa_certificates`) and what the server adds: the
    /// change log every replica catches up from, its triggers, the schema version, and ACME's
    /// shared state (``ACMEPostgresStore``). Tables added later that an older server can ignore
    /// do not change the version: it changes when an older server would serve the wrong thing.
    static let statements = """
    CREATE TABLE IF NOT EXISTS aasa_files (
        host text NOT NULL, name text NOT NULL, content bytea, updated_at timestamptz DEFAULT now(),
        PRIMARY KEY (host, name));
    CREATE TABLE IF NOT EXISTS aasa_certificates (
        name text PRIMARY KEY, chain text, key text, updated_at timestamptz DEFAULT now());
    CREATE TABLE IF NOT EXISTS aasa_changes (
        revision bigserial PRIMARY KEY, kind text NOT NULL, host text NOT NULL, name text NOT NULL,
        at timestamptz NOT NULL DEFAULT now());
    CREATE TABLE IF NOT EXISTS aasa_schema (version integer NOT NULL);
    CREATE TABLE IF NOT EXISTS aasa_store (id text NOT NULL);
    CREATE OR REPLACE FUNCTION aasa_file_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (OLD.host, OLD.name) IS DISTINCT FROM (NEW.host, NEW.name)) THEN
            INSERT INTO aasa_changes (kind, host, name) VALUES ('file', OLD.host, OLD.name);
        END IF;
        IF TG_OP <> 'DELETE' THEN
            INSERT INTO aasa_changes (kind, host, name) VALUES ('file', NEW.host, NEW.name);
        END IF;
        PERFORM pg_notify('aasa_changes', '');
        RETURN NULL;
    END $$;
    CREATE OR REPLACE FUNCTION aasa_certificate_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.name IS DISTINCT FROM NEW.name) THEN
            INSERT INTO aasa_changes (kind, host, name) VALUES ('certificate', '', OLD.name);
        END IF;
        IF TG_OP <> 'DELETE' THEN
            INSERT INTO aasa_changes (kind, host, name) VALUES ('certificate', '', NEW.name);
        END IF;
        PERFORM pg_notify('aasa_changes', '');
        RETURN NULL;
    END $$;
    CREATE OR REPLACE TRIGGER aasa_files_changed AFTER INSERT OR UPDATE OR DELETE ON aasa_files
        FOR EACH ROW EXECUTE FUNCTION aasa_file_changed();
    CREATE OR REPLACE TRIGGER aasa_certificates_changed AFTER INSERT OR UPDATE OR DELETE ON aasa_certificates
        FOR EACH ROW EXECUTE FUNCTION aasa_certificate_changed();
    CREATE TABLE IF NOT EXISTS aasa_acme_accounts (directory text PRIMARY KEY, key text NOT NULL, url text);
    CREATE TABLE IF NOT EXISTS aasa_acme_certificates (
        name text PRIMARY KEY, certificate_url text, order_url text, issued_at timestamptz NOT NULL DEFAULT now());
    CREATE TABLE IF NOT EXISTS aasa_acme_challenges (
        type text NOT NULL, name text NOT NULL, key_authorization text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (type, name));
    CREATE TABLE IF NOT EXISTS aasa_acme_orders (id integer PRIMARY KEY, tokens float8 NOT NULL, updated_at timestamptz NOT NULL);
    CREATE OR REPLACE TRIGGER aasa_acme_certificates_changed AFTER INSERT OR UPDATE OR DELETE ON aasa_acme_certificates
        FOR EACH ROW EXECUTE FUNCTION aasa_certificate_changed();
    CREATE OR REPLACE FUNCTION aasa_challenge_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP <> 'INSERT' THEN
            INSERT INTO aasa_changes (kind, host, name) VALUES ('challenge', OLD.type, OLD.name);
        END IF;
        IF TG_OP <> 'DELETE' THEN
            INSERT INTO aasa_changes (kind, host, name) VALUES ('challenge', NEW.type, NEW.name);
        END IF;
        PERFORM pg_notify('aasa_changes', '');
        RETURN NULL;
    END $$;
    CREATE OR REPLACE TRIGGER aasa_acme_challenges_changed AFTER INSERT OR UPDATE OR DELETE ON aasa_acme_challenges
        FOR EACH ROW EXECUTE FUNCTION aasa_challenge_changed();
    """

    /// What tells this store from another that comes back at the same address: the id made with
    /// its tables, the database's OID (a database dropped and made again, or restored into a new
    /// one, has another) and, where this role may read it, the cluster's system identifier.
    static func identity(_ c: PostgresConnection) throws(PostgresError) -> String {
        let rows = try c.execute("SELECT (SELECT min(id) FROM aasa_store), (SELECT oid::text FROM pg_database WHERE datname = current_database())")
        let system = (try? c.execute("SELECT system_identifier::text FROM pg_control_system()")).flatMap { $0.text(0, 0) } ?? ""
        return (rows.text(0, 0) ?? "") + "/" + (rows.text(0, 1) ?? "") + "/" + system
    }

    /// Makes what is missing, idempotently; throws a message when the store is newer than this server.
    static func prepare(_ c: PostgresConnection) throws(PostgresError) {
        try c.run("BEGIN; SELECT pg_advisory_xact_lock(\(lockKey));")
        do throws(PostgresError) {
            try c.run(statements)
            let rows = try c.execute("SELECT max(version)::bigint FROM aasa_schema")
            let found = rows.int64(0, 0)
            if let found, found > Int64(version) {
                throw PostgresError(message: "the store's schema is version \(found), newer than this aasa knows (\(version)): upgrade aasa",
                                    state: "aasa-schema", connectionLost: false)
            }
            if found == nil { try c.execute("INSERT INTO aasa_schema (version) VALUES (\(version))") }
            // The store's identity, made once with its tables (``identity(_:)``).
            try c.execute("INSERT INTO aasa_store (id) SELECT md5(random()::text || clock_timestamp()::text) WHERE NOT EXISTS (SELECT 1 FROM aasa_store)")
            try c.run("COMMIT")
        } catch {
            _ = try? c.run("ROLLBACK")
            throw error
        }
    }
}
