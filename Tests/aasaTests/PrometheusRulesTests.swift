import ChildProcess
import Foundation
import Testing

private let rules = AASABinary.packageRoot.appendingPathComponent("deploy/prometheus/aasa-rules.yaml").path
private let promtool = "/usr/bin/promtool"

/// deploy/prometheus/aasa-rules.yaml, checked by Prometheus's own promtool (Debian's
/// `prometheus` package, in the Makefile's TEST_PACKAGES), and its metrics read from a running
/// monitor.
@Suite struct PrometheusRulesTests {
    @Test func promtoolChecksTheRules() throws {
        let r = try Shell.run(promtool, ["check", "rules", rules])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("SUCCESS: 3 rules found"))
    }

    @Test func eachAlertFiresOnTheSeriesItIsFor() throws {
        let dir = try TemporaryDirectory()
        let test = try dir.write("aasa-rules.test.yaml", """
        rule_files: [\(rules)]
        evaluation_interval: 1m
        tests:
          - interval: 1m
            input_series:
              - series: 'aasa_monitor_domains{check="origin",state="failing"}'
                values: '0 1x30'
              - series: 'aasa_monitor_bot_blocked'
                values: '0 0 1x20'
              - series: 'aasa_monitor_cdn_behind_seconds'
                values: '0+3600x60'
            alert_rule_test:
              - eval_time: 10m
                alertname: AASAOriginFailing
                exp_alerts: []
              - eval_time: 20m
                alertname: AASAOriginFailing
                exp_alerts:
                  - exp_labels: {severity: critical}
                    exp_annotations:
                      summary: "1 domain(s) serve no good apple-app-site-association file"
                      description: "aasa monitor finds 1 origin(s) failing. GET /status?state=failing on the monitor's admin listener names them and the failing check."
              - eval_time: 15m
                alertname: AASABotBlocked
                exp_alerts:
                  - exp_labels: {severity: critical}
                    exp_annotations:
                      summary: "1 domain(s) answer Apple's bot differently from browsers"
                      description: "Allow User-Agent AASA-Bot/1.0.0 to fetch /.well-known/apple-app-site-association. GET /status?state=failing on the monitor's admin listener shows the bot-blocked check."
              - eval_time: 47m
                alertname: AASACDNNotCurrentAfterOriginChange
                exp_alerts: []
              - eval_time: 49m
                alertname: AASACDNNotCurrentAfterOriginChange
                exp_alerts:
                  - exp_labels: {severity: warning}
                    exp_annotations:
                      summary: "Apple's CDN is not current 48 hours after an origin change"
                      description: "The oldest origin change Apple's CDN does not serve yet is 2d 1h 0m 0s old. Look at each domain's cdn state and story in /status: the cdn failureReason quotes Apple-Failure-Reason."

        """)
        let r = try Shell.run(promtool, ["test", "rules", test])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
    }

    @Test func everyMetricTheRulesReadIsOneTheMonitorServes() throws {
        let text = try String(contentsOfFile: rules, encoding: .utf8)
        let names = Set(text.split(whereSeparator: { !$0.isLetter && !$0.isNumber && $0 != "_" }).map(String.init).filter { $0.hasPrefix("aasa_monitor_") })
        #expect(names == ["aasa_monitor_domains", "aasa_monitor_bot_blocked", "aasa_monitor_cdn_behind_seconds"])
        let dir = try TemporaryDirectory()
        let file = try dir.write("domains.txt", "example.com connect=127.0.0.1:\(try freePort())\n")
        let admin = try freePort()
        let process = Process()
        process.executableURL = AASABinary.url
        process.arguments = ["monitor", "--domains", file, "--admin", "127.0.0.1:\(admin)", "--dal-base", "off", "--cdn-base", "http://127.0.0.1:\(try freePort())"]
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { process.stop(grace: 5) }
        var metrics = ""
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, metrics.isEmpty {
            metrics = (try? RawHTTP.exchange(port: admin, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")).map(RawHTTP.body) ?? ""
            if metrics.isEmpty { usleep(50_000) }
        }
        for name in names { #expect(metrics.contains("\n\(name)") || metrics.hasPrefix(name), "\(name) not in /metrics") }
    }
}
