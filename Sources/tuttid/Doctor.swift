import Glibc
import TuttiControlClient
import TuttiCore
import TuttiFollower
import TuttiNet

/// `tuttid doctor` (what `tutti doctor` runs): reads the speaker's settings as tutti-follower does and
/// checks the machine against them. Exit 0 when nothing is wrong, 1 otherwise.
func runDoctor(_ arguments: [String]) -> Never {
    let invocation: FollowerInvocation
    let request: ConfigRequest
    do {
        request = try ConfigRequest(arguments)
        guard let parsed = try FollowerConfiguration.parse(request.arguments, file: try loadConfigFile(request),
                                                           hostname: hostname().split(separator: ".").first.map(String.init) ?? "follower") else {
            print("usage: tutti doctor [--config FILE] [speaker options]"); exit(0)
        }
        invocation = parsed
    } catch { fail(error.message, code: 64) }
    let probe = SystemDoctorProbe { control, room in
        do {
            let client = try ControlClient(endpoint: try Endpoint(parsing: control), timeoutMilliseconds: 2_000)
            let rooms = try client.call("rooms.list") as? [String: Any]
            let list = rooms?["rooms"] as? [[String: Any]] ?? []
            guard let entry = list.first(where: { $0["name"] as? String == room }) else {
                return .success(RoomHealthReport(connected: false, outputErrorMicroseconds: nil, bufferMilliseconds: nil, roundTripMicroseconds: nil))
            }
            let health = entry["health"] as? [String: Any]
            return .success(RoomHealthReport(connected: entry["connected"] as? Bool ?? false,
                                             outputErrorMicroseconds: health?["outputErrorUs"] as? Double,
                                             bufferMilliseconds: health?["bufferMs"] as? Double,
                                             roundTripMicroseconds: health?["rttUs"] as? Double))
        } catch { return .failure(DoctorProbeFailure("\(error)")) }
    }
    let file = request.named || access(request.path, F_OK) == 0 ? request.path : "\(request.path) (not there yet: defaults)"
    print("checking room '\(invocation.configuration.name)' as \(file) sets it up")
    let findings = Doctor.examine(DoctorSettings(invocation.configuration, configFile: request.path), probe)
    print(Doctor.render(findings), terminator: "")
    exit(findings.contains { $0.status == .fault } ? 1 : 0)
}

