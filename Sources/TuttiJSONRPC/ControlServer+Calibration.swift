import TuttiCore
import TuttiControlKit

/// `calibrate.*`: playing a calibration plan in rooms (docs/api.md,
/// docs/sound.md "Tuning rooms"). The analysis runs where the recording is
/// (`tutti calibrate --analyse`); trims are applied with `rooms.set`.
extension ControlServer {
    func dispatchCalibration(_ method: String, _ params: [String: JSONValue]) throws -> JSONValue? {
        switch method {
        case "calibrate.play":
            guard let rooms = params["rooms"]?.strings, !rooms.isEmpty, rooms.count <= 32,
                  rooms.allSatisfy({ !$0.isEmpty && $0.utf8.count <= WireProtocol.maxNameBytes }) else {
                throw RPCError(code: -32602, message: "calibrate.play needs \"rooms\": the connected rooms to measure, in order")
            }
            var slot = CalibrationPlan.defaultSlotNanoseconds
            if let raw = params["slotMs"] {
                guard let ms = raw.number, ms.isFinite, ms >= 1_500, ms <= 10_000 else {
                    throw RPCError(code: -32602, message: "slotMs must be a number from 1500 to 10000")
                }
                slot = Int64(ms * 1e6)
            }
            do {
                return try leader.playCalibration(rooms: rooms, slotNanoseconds: slot).json
            } catch {
                throw RPCError(code: -32000, message: error.description)
            }
        case "calibrate.status":
            return ["playing": .bool(leader.calibrationRunning)]
        default:
            return nil
        }
    }
}
