import Glibc
import TuttiCore
import TuttiNet
import TuttiSystem

/// `tutti doctor` (which runs `tutti-follower doctor`, or `tuttid doctor`
/// where no speaker is installed): reads the speaker's settings as
/// tutti-follower does, checks the machine against them and prints the
/// findings. Exit 0 when nothing is wrong, 1 otherwise, 64 on a usage error.
public func runSpeakerDoctor(_ arguments: [String], hostname: String) -> Never {
    let invocation: FollowerInvocation
    let request: ConfigRequest
    do {
        request = try ConfigRequest(arguments)
        guard let parsed = try FollowerConfiguration.parse(request.arguments, file: try loadConfigFile(request),
                                                           hostname: hostname.split(separator: ".").first.map(String.init) ?? "follower") else {
            print("usage: tutti doctor [--config FILE] [speaker options]"); exit(0)
        }
        invocation = parsed
    } catch {
        StandardErrorLog.write("tutti doctor: \(error.message)\n")
        exit(64)
    }
    let probe = SystemDoctorProbe { control, room in
        do throws(DoctorProbeFailure) { return .success(try roomHealth(control: control, room: room)) } catch { return .failure(error) }
    }
    let file = request.named || access(request.path, F_OK) == 0 ? request.path : "\(request.path) (not there yet: defaults)"
    print("checking room '\(invocation.configuration.name)' as \(file) sets it up")
    let findings = Doctor.examine(DoctorSettings(invocation.configuration, configFile: request.path), probe)
    print(Doctor.render(findings), terminator: "")
    exit(findings.contains { $0.status == .fault } ? 1 : 0)
}

/// The leader's view of `room` (`rooms.list` over its JSON-RPC port), without Foundation.
func roomHealth(control: String, room: String) throws(DoctorProbeFailure) -> RoomHealthReport {
    let answer: JSONValue
    do {
        let connection = try TCPConnection.connect(to: try Endpoint(parsing: control), timeoutMilliseconds: 2_000)
        defer { connection.close() }
        connection.setReceiveTimeout(milliseconds: 2_000)
        connection.setSendTimeout(milliseconds: 2_000)
        try connection.send(Array(#"{"jsonrpc":"2.0","id":1,"method":"rooms.list"}"#.utf8) + [0x0A])
        var line: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 1)
        defer { buffer.deallocate() }
        // Lines until the answer to id 1 (a leader may send notifications first); at most 4 MiB.
        while true {
            let n = try connection.receive(into: buffer).count
            guard n > 0 else { throw DoctorProbeFailure("the leader closed the connection without an answer") }
            line += buffer[0..<n]
            guard line.count <= 4 << 20 else { throw DoctorProbeFailure("the leader's answer is longer than 4 MiB") }
            var found: JSONValue? = nil
            while let newline = line.firstIndex(of: 0x0A) {
                let text = Array(line[..<newline])
                line.removeSubrange(...newline)
                if let value = try? JSONValue.parse(text), value["id"]?.number == 1 { found = value; break }
            }
            if let found { answer = found; break }
        }
    } catch let error as DoctorProbeFailure {
        throw error
    } catch {
        throw DoctorProbeFailure("\(error)")
    }
    if let message = answer["error"]?["message"]?.string { throw DoctorProbeFailure(message) }
    let entry = answer["result"]?["rooms"]?.array?.first { $0["name"]?.string == room }
    guard let entry else {
        return RoomHealthReport(connected: false, outputErrorMicroseconds: nil, bufferMilliseconds: nil, roundTripMicroseconds: nil)
    }
    let health = entry["health"]
    return RoomHealthReport(connected: entry["connected"]?.bool ?? false,
                            outputErrorMicroseconds: health?["outputErrorUs"]?.number,
                            bufferMilliseconds: health?["bufferMs"]?.number,
                            roundTripMicroseconds: health?["rttUs"]?.number)
}
