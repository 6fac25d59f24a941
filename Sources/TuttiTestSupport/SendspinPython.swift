import Foundation

/// Python 3.12 with PyPI's aiosendspin, for tests against Sendspin's own
/// reference code (aiosendspin 10 needs Python >= 3.12; Debian 12 has 3.11).
///
/// The venv lives under the user's cache (`$XDG_CACHE_HOME` or `~/.cache`,
/// `tutti/sendspin-venv`), made once: by scripts/setup.sh on CI, else by the
/// first test that asks (about a minute, from PyPI). Its interpreter's path,
/// or nil, with the reason, only where no Python 3.12 exists (then skip).
public enum SendspinPython {
    /// The versions the tests were written against (docs/sendspin.md).
    public static let packages = ["aiosendspin==10.2.1", "sendspin==9.0.0", "pillow"]

    public static var venv: String {
        let env = ProcessInfo.processInfo.environment
        let cache = env["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? ((env["HOME"] ?? "/root") + "/.cache")
        return cache + "/tutti/sendspin-venv"
    }

    private static let made: Result<String, CommandFailed> = {
        do { return .success(try make()) } catch let e as CommandFailed { return .failure(e) } catch { return .failure(CommandFailed(description: "\(error)")) }
    }()

    /// The venv's python3, or a reason it cannot exist here.
    public static func interpreter() -> Result<String, CommandFailed> { made }

    /// A Python 3.12 to make the venv with: pyenv's, or one on PATH.
    static func basePython() -> String? {
        var candidates: [String] = []
        var roots = [(ProcessInfo.processInfo.environment["PYENV_ROOT"] ?? ((ProcessInfo.processInfo.environment["HOME"] ?? "/root") + "/.pyenv"))]
        if let root = try? runProgram("/usr/bin/env", ["pyenv", "root"]), root.status == 0 {
            roots.insert(root.out.trimmingCharacters(in: .whitespacesAndNewlines), at: 0)
        }
        for root in roots {
            let versions = (try? FileManager.default.contentsOfDirectory(atPath: root + "/versions")) ?? []
            candidates += versions.filter { $0.hasPrefix("3.12") }.sorted().reversed().map { root + "/versions/\($0)/bin/python3" }
        }
        candidates += ["/usr/bin/python3.12", "/usr/local/bin/python3.12"]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    private static func make() throws -> String {
        let python = venv + "/bin/python3"
        func ready() -> Bool { (try? runProgram(python, ["-c", "import aiosendspin.noise, aiosendspin.client.time_sync, av, PIL"]))?.status == 0 }
        if ready() { return python }
        guard let base = basePython() else {
            throw CommandFailed(description: "no Python 3.12 here (pyenv or python3.12): aiosendspin needs it; scripts/setup.sh installs one")
        }
        // Made beside, then renamed, so two test processes never see half a venv.
        let building = venv + ".building-\(getpid())"
        do {
            try? FileManager.default.removeItem(atPath: building)
            try FileManager.default.createDirectory(atPath: (venv as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let made = try runProgram(base, ["-m", "venv", building])
            guard made.status == 0 else { throw CommandFailed(description: "venv: \(made.err)") }
            let pip = try runProgram(building + "/bin/pip", ["install", "--quiet"] + packages, timeout: 600)
            guard pip.status == 0 else { throw CommandFailed(description: "pip install \(packages.joined(separator: " ")): \(pip.err)") }
            if !ready() {
                try? FileManager.default.removeItem(atPath: venv)
                try FileManager.default.moveItem(atPath: building, toPath: venv)
            }
        } catch {
            try? FileManager.default.removeItem(atPath: building)
            throw error
        }
        guard ready() else { throw CommandFailed(description: "the venv at \(venv) cannot import aiosendspin") }
        return python
    }
}
