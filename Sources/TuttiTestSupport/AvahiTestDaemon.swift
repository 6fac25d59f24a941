import Foundation
import Glibc

/// A real avahi-daemon for one test, on the loopback interface only, IPv4,
/// with the D-Bus system bus it needs (started if not running). Holds an
/// exclusive lock on /tmp/tutti-avahi-test.lock while alive, so tests in
/// other suites or processes never share or stop each other's daemon.
///
/// Throws (the test fails) when avahi-daemon or dbus-daemon is missing:
/// CI installs them through scripts/setup.sh.
public final class AvahiTestDaemon {
    public struct Failure: Error, CustomStringConvertible { public let description: String }

    public static let binary = "/usr/sbin/avahi-daemon"
    public let directory: String
    private let lockFD: Int32
    public private(set) var running = false

    /// Takes the lock and makes sure no avahi-daemon runs; `start()` starts ours.
    public init() throws {
        for tool in [Self.binary, "/usr/bin/dbus-daemon", "/usr/bin/dbus-send"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw Failure(description: "\(tool) is missing: install avahi-daemon and dbus (scripts/setup.sh does)")
        }
        lockFD = open("/tmp/tutti-avahi-test.lock", O_CREAT | O_RDWR, 0o666)
        guard lockFD >= 0 else { throw Failure(description: "cannot open /tmp/tutti-avahi-test.lock: errno \(errno)") }
        flock(lockFD, LOCK_EX)
        directory = NSTemporaryDirectory() + "tutti-avahi-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Never talk on the machine's real interfaces: loopback only.
        try """
        [server]
        use-ipv4=yes
        use-ipv6=no
        allow-interfaces=lo
        [wide-area]
        enable-wide-area=no
        [publish]
        publish-hinfo=no
        publish-workstation=no
        publish-aaaa-on-ipv4=no
        """.write(toFile: directory + "/avahi.conf", atomically: true, encoding: .utf8)
        try ensureSystemBus()
        try killAnyDaemon()
    }

    deinit {
        try? stop()
        try? FileManager.default.removeItem(atPath: directory)
        flock(lockFD, LOCK_UN)
        close(lockFD)
    }

    /// Starts the daemon and waits until it is running (server state 2).
    /// - Returns: seconds it took.
    @discardableResult
    public func start(timeout: Double = 15) throws -> Double {
        let began = Date()
        // A pid file left by a daemon that died makes the next one refuse to start.
        try? FileManager.default.removeItem(atPath: "/run/avahi-daemon/pid")
        let (status, out) = try runProcess(Self.binary, ["-f", directory + "/avahi.conf", "--no-drop-root", "--no-chroot", "--no-rlimits", "-D"])
        guard status == 0 else { throw Failure(description: "avahi-daemon did not start (exit \(status)): \(out)") }
        running = true
        while Date().timeIntervalSince(began) < timeout {
            let (_, state) = try runProcess("/usr/bin/dbus-send", ["--system", "--dest=org.freedesktop.Avahi", "--print-reply", "/",
                                                                 "org.freedesktop.Avahi.Server.GetState"])
            if state.contains("int32 2") { return Date().timeIntervalSince(began) }
            usleep(20_000)
        }
        throw Failure(description: "avahi-daemon did not reach the running state within \(timeout) s")
    }

    /// Stops the daemon (`avahi-daemon -k`) and waits until it has exited.
    public func stop() throws {
        guard running else { return }
        running = false
        try killAnyDaemon()
    }

    private func killAnyDaemon() throws {
        guard try runProcess(Self.binary, ["-c"]).status == 0 else { return } // exit 0: one is running
        _ = try runProcess(Self.binary, ["-k"])
        let began = Date()
        while try runProcess(Self.binary, ["-c"]).status == 0 {
            guard Date().timeIntervalSince(began) < 10 else { throw Failure(description: "avahi-daemon -k: the daemon did not exit") }
            usleep(20_000)
        }
    }

    private func ensureSystemBus() throws {
        if try runProcess("/usr/bin/dbus-send", ["--system", "--dest=org.freedesktop.DBus", "--print-reply", "/", "org.freedesktop.DBus.GetId"]).status == 0 {
            return
        }
        try FileManager.default.createDirectory(atPath: "/run/dbus", withIntermediateDirectories: true)
        try? FileManager.default.removeItem(atPath: "/run/dbus/pid")
        try? FileManager.default.removeItem(atPath: "/run/dbus/system_bus_socket")
        let (status, out) = try runProcess("/usr/bin/dbus-daemon", ["--system", "--fork"])
        guard status == 0 else { throw Failure(description: "cannot start the D-Bus system bus (exit \(status)): \(out)") }
    }

}
