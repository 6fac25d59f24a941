import Foundation
import Glibc
import TuttiCore
import TuttiNet

let usage = """
usage: tutti [--host HOST] [--port PORT] [--json] COMMAND [ARGS]

  status                 what is playing, and every room with its sync health
  play | pause | toggle  transport
  next | prev            skip (prev restarts the track when more than 3 s in)
  seek SECONDS | +S | -S absolute or relative seek in the current track
  rooms                  rooms with volume, latency trim and sync health
  vol ROOM 0-100         room volume
  mute ROOM | unmute ROOM
  latency ROOM MS        compensate a speaker's delay after its DAC
  watch                  follow changes as they happen

The leader's control socket defaults to 127.0.0.1:4954.
Exit codes: 0 done, 1 the leader refused (message on stderr), 2 cannot reach the leader, 64 usage.
"""

func fail(_ message: String, _ code: Int32) -> Never {
    FileHandle.standardError.write("tutti: \(message)\n".data(using: .utf8)!)
    exit(code)
}

var args = Array(CommandLine.arguments.dropFirst())
var host = "127.0.0.1", port: UInt16 = 4954, json = false
var rest: [String] = []
while !args.isEmpty {
    let a = args.removeFirst()
    switch a {
    case "--host": guard !args.isEmpty else { fail("--host needs a value", 64) }; host = args.removeFirst()
    case "--port":
        guard let p = args.first.flatMap({ UInt16($0) }) else { fail("--port needs a number 1–65535", 64) }
        args.removeFirst(); port = p
    case "--json": json = true
    case "-h", "--help", "help": print(usage); exit(0)
    default: rest.append(a)
    }
}
guard let command = rest.first else { print(usage); exit(64) }
let operands = Array(rest.dropFirst())

func output(_ value: Any) {
    if let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .prettyPrinted, .fragmentsAllowed]) {
        print(String(decoding: data, as: UTF8.self))
    }
}

func clock(_ seconds: Double) -> String {
    let s = Int(seconds.rounded(.down))
    return String(format: "%d:%02d", s / 60, s % 60)
}

func describeStatus(_ s: [String: Any]) -> String {
    let position = s["position"] as? Double ?? 0
    let duration = s["duration"] as? Double
    var bar = ""
    if let d = duration, d > 0 {
        let filled = min(30, Int(30 * position / d))
        bar = " [" + String(repeating: "#", count: filled) + String(repeating: "-", count: 30 - filled) + "]"
    }
    let file = (s["file"] as? String).map { URL(fileURLWithPath: $0).lastPathComponent } ?? "?"
    let track = (s["track"] as? Int ?? 0) + 1
    return "\(s["state"] as? String ?? "?"): \(file) (track \(track)/\(s["trackCount"] as? Int ?? 0)) \(clock(position))\(duration.map { "/" + clock($0) } ?? "")\(bar)"
}

func describeRoom(_ r: [String: Any]) -> String {
    var line = "\(r["name"] as? String ?? "?"): volume \(r["volume"] as? Int ?? 0)\((r["muted"] as? Bool ?? false) ? " (muted)" : "")"
    if let trim = r["latencyMs"] as? Double, trim != 0 { line += String(format: ", latency %+.1f ms", trim) }
    if let h = r["health"] as? [String: Any] {
        line += String(format: ", sync %+.1f µs, buffer %.0f ms, ratio %+.1f ppm, rtt %.0f µs, underruns %d, resyncs %d",
                       h["outputErrorUs"] as? Double ?? 0, h["bufferMs"] as? Double ?? 0, h["ratioPpm"] as? Double ?? 0,
                       h["rttUs"] as? Double ?? 0, h["underruns"] as? Int ?? 0, h["hardResyncs"] as? Int ?? 0)
    }
    return line
}

let client: ControlClient
do { client = try ControlClient(endpoint: Endpoint(host: host, port: port)) } catch {
    fail("cannot reach the leader at \(host):\(port): \(error)", 2)
}

@MainActor func call(_ method: String, _ params: [String: Any] = [:]) -> Any {
    do { return try client.call(method, params) } catch let e as ControlClient.RemoteError {
        fail(e.message, 1)
    } catch {
        fail("\(error)", 2)
    }
}

@MainActor func needRoom() -> String {
    guard let room = operands.first else { fail("\(command) needs a room name", 64) }
    return room
}

switch command {
case "status":
    let status = call("player.status") as? [String: Any] ?? [:]
    let rooms = (call("rooms.list") as? [String: Any])?["rooms"] as? [[String: Any]] ?? []
    if json { output(["player": status, "rooms": rooms]) } else {
        print(describeStatus(status))
        if rooms.isEmpty { print("no rooms connected") }
        for r in rooms { print("  " + describeRoom(r)) }
    }
case "play", "pause", "toggle", "next", "prev", "previous":
    let method = command == "prev" ? "player.previous" : "player.\(command)"
    let result = call(method)
    if json { output(result) } else if let s = result as? [String: Any] { print(describeStatus(s)) }
case "seek":
    guard let text = operands.first, let value = Double(text), value.isFinite else { fail("seek needs SECONDS, +SECONDS or -SECONDS", 64) }
    let relative = text.hasPrefix("+") || text.hasPrefix("-")
    let result = call("player.seek", relative ? ["by": value] : ["position": value])
    if json { output(result) } else if let s = result as? [String: Any] { print(describeStatus(s)) }
case "rooms":
    let rooms = (call("rooms.list") as? [String: Any])?["rooms"] as? [[String: Any]] ?? []
    if json { output(rooms) } else { for r in rooms { print(describeRoom(r)) } }
case "vol", "mute", "unmute", "latency":
    let room = needRoom()
    var params: [String: Any] = ["room": room]
    switch command {
    case "vol":
        guard operands.count > 1, let v = Int(operands[1]), (0...100).contains(v) else { fail("vol needs ROOM and a volume 0–100", 64) }
        params["volume"] = v
    case "latency":
        guard operands.count > 1, let ms = Double(operands[1]), ms.isFinite else { fail("latency needs ROOM and milliseconds", 64) }
        params["latencyMs"] = ms
    default:
        params["muted"] = command == "mute"
    }
    let result = call("rooms.set", params)
    if json { output(result) } else if let r = result as? [String: Any] { print(describeRoom(r)) }
case "watch":
    client.setReceiveTimeout(milliseconds: 0)
    _ = call("player.status")
    while true {
        do {
            let (method, params) = try client.nextNotification()
            if json { output(["method": method, "params": params]) } else if method == "player.changed" {
                print(describeStatus(params))
            } else if method == "rooms.changed" {
                for r in params["rooms"] as? [[String: Any]] ?? [] { print(describeRoom(r)) }
            } else {
                print("\(method)")
            }
        } catch {
            fail("\(error)", 2)
        }
    }
default:
    fail("unknown command '\(command)' (tutti --help)", 64)
}
