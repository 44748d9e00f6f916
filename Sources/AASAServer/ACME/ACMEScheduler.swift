import AASACore
import AASAHTTP
import AASATransport
import AASAClient
#if canImport(Glibc)
import Glibc
#endif

/// The ACME thread (docs/acme.md): at start and whenever the snapshot changes, every configured
/// host that no certificate covers is ordered, every ACME certificate past two thirds of its
/// lifetime is renewed, and one that covers no site any more is removed. One replica at a time
/// orders a host (the store's lock); failures back off exponentially. It only reads the
/// published snapshot and writes to the store (``ACMEStore``: `--certs`, or PostgreSQL): the
/// reload that follows makes new handshakes use the new certificate. The loops and the
/// control thread never wait for it.
final class ACMEScheduler {
    private let configuration: ACMEConfiguration
    private let storage: any ACMEStore
    private let state: ServerState
    private let status: ACMEStatus
    private let log: Log
    private var client: ACMEClient?

    private struct Backoff {
        var failures: Int
        /// Monotonic milliseconds.
        var nextAttempt: Int64
    }

    private var backoff: [String: Backoff] = [:]
    /// Validity of certificates written by this process, until the snapshot shows them.
    private var written: [String: CertificateValidity] = [:]
    private var reportedWildcards: Set<String> = []
    /// Set when a forgotten account was replaced; a second such failure in a row backs off.
    private var recreatedAccount = false
    /// Challenges other replicas published (`TYPE/NAME` → key authorization), answered here too.
    private var foreign: [String: String] = [:]
    /// When the order bucket, empty at the last look, is worth asking again (monotonic ms).
    private var bucketEmptyUntil: Int64 = 0
    /// ACME certificates whose host no site serves, since when (monotonic ms).
    private var orphans: [String: Int64] = [:]
    /// How long a host must be gone before its certificate is removed: a site folder renamed,
    /// or a site deleted and written again, is not a reason to order again.
    static let orphanGraceMilliseconds: Int64 = 10_000

    init(configuration: ACMEConfiguration, store: any ACMEStore, state: ServerState, status: ACMEStatus, log: Log) {
        self.configuration = configuration
        self.storage = store
        self.state = state
        self.status = status
        self.log = log
    }

    /// Starts the ACME thread, which makes its scheduler and alone touches it. Never joined: at
    /// shutdown it notices the drain within a second, and the process may exit before an order
    /// in flight ends (the next start picks it up again). The store is made on that thread.
    static func start(configuration: ACMEConfiguration, store: @escaping @Sendable () -> any ACMEStore, state: ServerState,
                      status: ACMEStatus, log: Log) {
        pthread_detach(startThread {
            ACMEScheduler(configuration: configuration, store: store(), state: state, status: status, log: log).run()
        })
    }

    private func run() {
        // With the store, nothing is decided before its first load: the snapshot is empty until then.
        while !state.ready.load(ordering: .acquiring) {
            if state.isDraining { return }
            usleep(100_000)
        }
        var reported = false
        while true {
            do {
                try storage.prepare()
                break
            } catch {
                // The store away at start: no order until it is back.
                if !reported { log.error("acme: \(error); no certificates are ordered until it works (retrying every 5 s)") }
                reported = true
                for _ in 0..<50 where !state.isDraining { usleep(100_000) }
                if state.isDraining { return }
            }
        }
        log.info("acme: \(configuration.challenge.rawValue) challenges, directory \(configuration.directory), at most \(configuration.orderRate) orders per 3 hours")
        status.challenges.demand.isEnabled = true
        // The hosts due, looked for again when the snapshot changes, after an order, and every
        // 5 s (renewals fall due with time): not five walks over 100 000 sites a second.
        var cached: (generation: Int, at: Int64, due: [String])?
        while !state.isDraining {
            syncSharedChallenges()
            let (snapshot, generation) = state.snapshots.load()
            let now = monotonicMilliseconds()
            if cached == nil || cached?.generation != generation || now - (cached?.at ?? now) >= 5_000 {
                cached = (generation, now, dueHosts(snapshot))
            }
            // The names clients asked for first, then site order.
            let demand = status.challenges.demand.current
            var due = cached?.due ?? []
            if !demand.isEmpty {
                due = due.filter { demand.contains($0) } + due.filter { !demand.contains($0) }
            }
            let ready = due.first(where: { (backoff[$0]?.nextAttempt ?? 0) <= now })
            // The next order starts when the bucket has a token and a waiting host's back-off is over.
            let earliest = due.lazy.map { self.backoff[$0]?.nextAttempt ?? now }.min() ?? now
            if let host = ready, now >= bucketEmptyUntil, attempt(host, waiting: max(0, due.count - 1)) {
                cached = nil
            } else {
                // The bucket (shared by the replicas of a store) is asked again when it should
                // have an order, or in a second, not five times a second.
                if ready != nil, now >= bucketEmptyUntil { bucketEmptyUntil = max(now + 1_000, storage.nextOrder(now: now)) }
                let nextOrder = max(bucketEmptyUntil, earliest, now)
                status.setQueue(ACMEStatus.Queue(queued: due.count,
                                                 nextOrderAt: due.isEmpty ? nil : wallClockSeconds() + Int((nextOrder - now + 999) / 1000)))
                // Sites, certificates and shared challenges are looked at five times a second:
                // a new site gets its order right after the reload that found it.
                usleep(200_000)
            }
        }
    }

    /// Answers the challenges another replica published in the shared `--certs`, and stops
    /// answering those it withdrew. Our own are never in `foreign`: they are published and
    /// withdrawn while this thread is inside ``attempt(_:)``.
    private func syncSharedChallenges() {
        guard let shared = storage.sharedChallenges() else { return }
        for (key, keyAuthorization) in shared where foreign[key] != keyAuthorization {
            let parts = key.split(separator: "/", maxSplits: 1).map(String.init)
            guard parts.count == 2, let type = ChallengeType(rawValue: parts[0]) else { continue }
            switch type {
            case .http01:
                status.challenges.addToken(parts[1], keyAuthorization: keyAuthorization)
            case .tlsALPN01:
                guard let certificate = try? ChallengeCertificate(host: parts[1], keyAuthorization: keyAuthorization) else { continue }
                status.challenges.addCertificate(certificate)
            }
            foreign[key] = keyAuthorization
        }
        for key in foreign.keys where shared[key] == nil {
            let parts = key.split(separator: "/", maxSplits: 1).map(String.init)
            if parts[0] == ChallengeType.http01.rawValue { status.challenges.removeToken(parts[1]) } else { status.challenges.removeCertificate(host: parts[1]) }
            foreign[key] = nil
        }
    }

    /// Hosts to order now, in site order: uncovered ones, and ACME ones due for renewal.
    private func dueHosts(_ snapshot: SiteSnapshot) -> [String] {
        var hosts: [String] = []
        var seen: Set<String> = []
        for site in snapshot.sites {
            if site.name.isWildcard {
                if !reportedWildcards.contains(site.name.description) {
                    reportedWildcards.insert(site.name.description)
                    log.warning("acme: site \(site.name) is a wildcard: its certificate needs a DNS-01 challenge, which aasa cannot answer; put one in --certs. Its base name \(site.name.host) is ordered like any other host")
                    status.set(site.name.description, .wildcard, error: "wildcard names need DNS-01 validation; not ordered")
                }
            }
            // A wildcard site also serves its base name, a plain name (docs/serving.md, "Config directory"; docs/acme.md).
            if seen.insert(site.name.host).inserted { hosts.append(site.name.host) }
        }
        status.keep(only: Set(hosts + snapshot.sites.filter(\.name.isWildcard).map(\.name.description)))
        removeOrphans(snapshot, hosts: Set(hosts))
        let now = wallClockSeconds()
        return hosts.filter { host in
            // The certificate a handshake for the host gets (exact name, then wildcard).
            let serving = snapshot.certificates.select(serverName: host).flatMap { $0.covers(host) ? $0 : nil }
            // A certificate someone else put in --certs wins: never order over it.
            if let serving, !snapshot.certificates.isACME(serving) { return false }
            var renewAfter = serving.map { CertificateValidity(notBefore: $0.notBefore, notAfter: $0.notAfter).renewAfter }
            if let mine = written[host]?.renewAfter { renewAfter = max(renewAfter ?? mine, mine) }
            guard let renewAfter else { return true }
            if now < renewAfter {
                status.set(host, .issued, nextAttempt: renewAfter)
                return false
            }
            return true
        }
    }

    /// ACME certificates whose host no site serves any more (deleted through the API, by SQL,
    /// or from the config folder) are removed once the host has been gone for
    /// ``orphanGraceMilliseconds``; a certificate someone else put in is never touched.
    private func removeOrphans(_ snapshot: SiteSnapshot, hosts: Set<String>) {
        let now = monotonicMilliseconds()
        let gone = snapshot.certificates.acmeNames.subtracting(hosts)
        orphans = orphans.filter { gone.contains($0.key) }
        for name in gone {
            let since = orphans[name] ?? now
            orphans[name] = since
            guard now - since >= ACMEScheduler.orphanGraceMilliseconds else { continue }
            do throws(ACMEError) {
                try storage.removeCertificate(host: name)
                written[name] = nil
                orphans[name] = nil
                log.info("acme: \(name): no site uses this certificate any more; removed")
            } catch {
                log.error("acme: \(name): cannot remove the certificate no site uses: \(error)")
                orphans[name] = now
            }
        }
    }

    /// Orders `host` unless another replica is ordering it or did meanwhile; false when the
    /// order bucket was empty (nothing done). The lock comes before the bucket: an order that
    /// does not happen takes no order from the replicas sharing the bucket.
    private func attempt(_ host: String, waiting: Int) -> Bool {
        let lock: ACMELock?
        do {
            lock = try storage.lock(host)
        } catch {
            fail(host, error)
            return true
        }
        guard let lock else {
            // Another replica is ordering; what it writes appears through the reload.
            status.set(host, .pending, error: "\(storage.lockDescription) is ordering it")
            backoff[host] = Backoff(failures: backoff[host]?.failures ?? 0, nextAttempt: monotonicMilliseconds() + 5_000)
            return true
        }
        defer { lock.release() }
        // Another replica may have issued it while we waited for the lock.
        if let validity = storage.issuedValidity(host: host), wallClockSeconds() < validity.renewAfter {
            written[host] = validity
            backoff[host] = nil
            return true
        }
        let now = monotonicMilliseconds()
        guard storage.takeOrder(now: now) else { return false }
        status.challenges.demand.remove(host)
        let next = waiting == 0 ? now : storage.nextOrder(now: now)
        status.setQueue(ACMEStatus.Queue(queued: waiting, nextOrderAt: waiting == 0 ? nil : wallClockSeconds() + Int((next - now + 999) / 1000)))
        status.set(host, .ordering)
        do throws(ACMEError) {
            let client = try ensureClient()
            log.info("acme: \(host): ordering a certificate")
            let issued = try Issuance(client: client, challengeType: configuration.challenge, challenges: status.challenges, storage: storage, log: log).run(host: host)
            try storage.saveCertificate(host: host, issued)
            guard let validity = CertificateValidity(pem: issued.chainPEM, host: host) else {
                throw ACMEError(.protocolViolation, "the issued certificate does not name \(host)")
            }
            written[host] = validity
            backoff[host] = nil
            recreatedAccount = false
            state.metrics.acmeOrdersIssued.add(1, ordering: .relaxed)
            status.set(host, .issued, nextAttempt: validity.renewAfter)
            log.info("acme: \(host): certificate issued, valid until \(HTTPDate.format(validity.notAfter)); renewal after \(HTTPDate.format(validity.renewAfter))")
        } catch {
            fail(host, error)
        }
        return true
    }

    private func fail(_ host: String, _ error: ACMEError) {
        state.metrics.acmeOrdersFailed.add(1, ordering: .relaxed)
        let failures = (backoff[host]?.failures ?? 0) + 1
        if case .problem(let p) = error.kind, p.type == "urn:ietf:params:acme:error:accountDoesNotExist", !recreatedAccount {
            recreatedAccount = true
            // The saved account is gone (deactivated, a reset test CA): make a new one with the
            // same key and try again at once; the failure still counts toward the back-off.
            client = nil
            storage.forgetAccount(directory: configuration.directory)
            backoff[host] = Backoff(failures: failures, nextAttempt: monotonicMilliseconds())
            status.set(host, .failed, error: error.description, nextAttempt: wallClockSeconds())
            log.error("acme: \(host): order failed: \(error); creating a new account and retrying at once")
            return
        }
        // A renewal's deadline: the expiry of the certificate the host has now.
        let notAfter = written[host]?.notAfter
            ?? state.snapshots.load().0.certificates.select(serverName: host).flatMap { $0.covers(host) ? $0.notAfter : nil }
        let expiresIn = notAfter.map { Int64($0 - wallClockSeconds()) * 1000 }
        let delay = configuration.retryDelay(failures: failures, retryAfterSeconds: error.retryAfter, expiresInMilliseconds: expiresIn)
        backoff[host] = Backoff(failures: failures, nextAttempt: monotonicMilliseconds() + delay)
        status.set(host, .failed, error: error.description, nextAttempt: wallClockSeconds() + Int((delay + 999) / 1000))
        log.error("acme: \(host): order failed: \(error); retrying in \(ACMEScheduler.duration(delay))")
        // The next attempt starts from the directory again (the CA may have moved or restarted).
        if case .transport = error.kind { client = nil }
    }

    /// The client with its account, made on first use and kept.
    private func ensureClient() throws(ACMEError) -> ACMEClient {
        if let client { return client }
        let http: HTTPSClient
        do {
            http = try HTTPSClient(.init(timeoutSeconds: 30, caFile: configuration.caRoot, userAgent: "aasa-acme/0.1"))
        } catch {
            throw ACMEError(.transport, "ACME client: \(error.message)")
        }
        let key = try storage.accountKey(directory: configuration.directory, log: log)
        let saved = storage.accountURL(directory: configuration.directory)
        let client = ACMEClient(directoryURL: configuration.directory, key: key, http: http, accountURL: saved, log: log)
        if saved == nil {
            let binding = configuration.externalAccountKeyID.flatMap { kid in
                configuration.externalAccountMACKey.map { ACMEClient.ExternalAccountBinding(keyID: kid, macKey: $0) }
            }
            let url = try client.ensureAccount(contact: configuration.email, binding: binding)
            try storage.saveAccount(url: url, directory: configuration.directory)
            log.info("acme: account \(url)")
        }
        self.client = client
        return client
    }

    static func duration(_ milliseconds: Int64) -> String {
        if milliseconds < 10_000 { return "\(Double(milliseconds) / 1000) s" }
        let s = milliseconds / 1000
        if s < 120 { return "\(s) s" }
        if s < 7200 { return "\(s / 60) min" }
        return "\(s / 3600) h"
    }
}
