import Glibc
import TuttiCore

/// `tutti calibrate`: plays a plan at the leader, or analyses a recording
/// of one here (the same analysis as the leader's, TuttiCore) and applies
/// the trims with `rooms.set`. A stereo pair is measured as its two sides,
/// each trimmed by its speaker's own name.
extension LeaderSession {
    func calibrate(_ c: CLICommand.Calibrate) throws(CLIFailure) {
        switch c {
        case .play(let rooms, let slot):
            var params: [String: JSONValue] = ["rooms": .array(rooms.map { .string($0) })]
            if let slot { params["slotMs"] = .number(slot) }
            let plan = try call("calibrate.play", params)
            if !json {
                let slots = plan["slots"]?.strings ?? []
                print(language.text(.cliCalibratePlaying, ["count": "\(slots.count)", "seconds": cFormat("%.1f", (plan["slotMs"]?.number ?? 0) / 1000),
                                                           "slots": slots.joined(separator: ", ")]))
            }
            // Wait for the plan to finish (the rooms are back where they were then).
            let seconds = Double(slotsCount(plan)) * (plan["slotMs"]?.number ?? 2000) / 1000 + 15
            let deadline = monotonicNow() + Int64(seconds * 1e9)
            while try call("calibrate.status")["playing"]?.bool == true {
                guard monotonicNow() < deadline else { throw .refused(UserMessage(.cliCalibrateUnfinished, ["seconds": "\(Int(seconds))"])) }
                usleep(100_000)
            }
            if json { output(plan) } else { print(language.text(.cliCalibrateDone, ["rooms": rooms.joined(separator: ",")])) }
        case .analyse(let path, let planPath, let rooms, let slot, let apply, let equalise):
            // Each speaker's trim now (a pair's two apart), and the pairs, which turn a pair's name into its two sides.
            var current: [String: Double] = [:]
            var pairs: [StereoPair] = []
            for r in objects(try call("rooms.list")["rooms"]) {
                guard let name = r["name"]?.string else { continue }
                current[name] = r["latencyMs"]?.number ?? 0
                for s in objects(r["speakers"]) { if let n = s["name"]?.string { current[n] = s["latencyMs"]?.number ?? 0 } }
                if let left = r["pair"]?["left"]?.string, let right = r["pair"]?["right"]?.string {
                    pairs.append(StereoPair(name: name, left: left, right: right))
                }
            }
            let plan: CalibrationPlan
            if let planPath {
                guard let text = try? readWhole(planPath), let value = JSONValue.parsing(text),
                      let p = CalibrationPlan(json: value, pairs: StereoPairs(pairs)) else {
                    throw .usage(UserMessage(.cliCalibrateNotAPlan, ["path": planPath]))
                }
                plan = p
            } else {
                plan = CalibrationPlan(rooms: rooms ?? [], pairs: StereoPairs(pairs), slotNanoseconds: Int64((slot ?? 2_000) * 1e6))
            }
            let (samples, rate) = try readRecording(path)
            let result: CalibrationResult
            do { result = try Calibration.analyse(recording: samples, sampleRate: rate, plan: plan) } catch {
                throw .refused(error.message)
            }
            let trims = result.trims(current: current)
            if json {
                // The same report as the web app's (`POST /calibrate`); problems in English, as `--json` always is.
                guard case .object(var report) = result.report(current: current, language: .english) else { return }
                report["applied"] = .bool(apply && result.isUsable)
                output(.object(report))
            } else {
                func measured(_ r: CalibrationRoomResult) -> String {
                    var line = ""
                    if let d = r.delayMilliseconds { line += language.text(.cliCalibrateDelay, ["ms": cFormat("%.3f", d)]) + ", " }
                    line += language.text(.cliCalibrateConfidence, ["db": cFormat("%.0f", r.confidenceDB)])
                    if let t = trims[r.room] {
                        line += ", " + language.text(.cliCalibrateTrim, ["from": cFormat("%.3f", current[r.room] ?? 0), "to": cFormat("%.3f", t)])
                    }
                    if let p = r.problem { line += " — " + p.message.text(in: language) }
                    return line
                }
                for group in result.byRoom {
                    if group.isPair {
                        print(language.text(.cliCalibratePair, ["room": group.room]))
                        for r in group.measured { print("  \(language.value((r.side ?? .stereo).name)) \(r.room): \(measured(r))") }
                    } else {
                        print("\(group.room): \(measured(group.measured[0]))")
                    }
                    let response = group.responseDB
                    if !response.isEmpty {
                        let bands = response.map { $0.map { cFormat("%+.1f", $0) } ?? "—" }.joined(separator: " ")
                        print("  " + language.text(group.isPair ? .cliCalibrateResponseBothSides : .cliCalibrateResponse, ["bands": bands]))
                        print("  " + language.text(.cliCalibrateFlatten, ["gains": group.correction.map { cFormat("%+.1f", $0) }.joined(separator: " ")]))
                    }
                }
                print(language.text(.cliCalibrateRecorder, ["ppm": cFormat("%+.1f", result.recorderRatePPM), "peak": cFormat("%.1f", result.peakDBFS)]))
            }
            if equalise {
                guard result.isUsable else { throw .refused(UserMessage(.cliCalibrateNoEq)) }
                // A pair has one EQ: set by its name, from both sides' response.
                for group in result.byRoom where !group.responseDB.isEmpty {
                    let name = "Tuned \(today()) \(String(group.room.prefix(40)))"
                    _ = try call("eq.save", ["name": .string(name), "gains": .numbers(group.correction)])
                    _ = try call("rooms.setEq", ["room": .string(group.room), "preset": .string(name)])
                    if !json { print(language.text(.cliCalibrateEqPreset, ["room": group.room, "name": name])) }
                }
            }
            guard apply else { return }
            guard result.isUsable else { throw .refused(UserMessage(.cliCalibrateNotApplied)) }
            guard trims.values.allSatisfy({ (-1_000...5_000).contains($0) }) else { throw .refused(UserMessage(.cliCalibrateTrimRange)) }
            // By each speaker's own name: a side of a pair is trimmed alone.
            for (room, ms) in trims.sorted(by: { $0.key < $1.key }) where ms != current[room] {
                _ = try call("rooms.set", ["room": .string(room), "latencyMs": .number(ms)])
            }
            if !json { print(language.text(.cliCalibrateApplied)) }
        }
    }

    private func monotonicNow() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
    }

    /// Today's date, YYYY-MM-DD, local time.
    private func today() -> String {
        var now = time(nil), parts = tm()
        localtime_r(&now, &parts)
        return cFormat("%04d-%02d-%02d", Int32(parts.tm_year + 1900), Int32(parts.tm_mon + 1), parts.tm_mday)
    }

    private func slotsCount(_ plan: JSONValue) -> Int { plan["slots"]?.array?.count ?? 0 }

    private func readWhole(_ path: String) throws(CLIFailure) -> [UInt8] {
        guard let f = fopen(path, "rb") else { throw .usage(UserMessage(.cliCalibrateCannotOpen, ["path": path, "reason": String(cString: strerror(errno))])) }
        defer { fclose(f) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, f) }
            if n <= 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
            guard bytes.count <= 512 << 20 else { throw .usage(UserMessage(.cliCalibrateTooBig, ["path": path])) }
        }
        return bytes
    }

    /// A WAV file's first channel, as floats, and its rate.
    private func readRecording(_ path: String) throws(CLIFailure) -> ([Float], Int) {
        let bytes = try readWhole(path)
        let format: WAVFormat
        do { format = try WAVParser.parse(header: Array(bytes.prefix(1 << 16)), fileSize: bytes.count) } catch {
            throw .usage(UserMessage(.cliCalibrateNotWAV, ["path": path, "reason": error.description]))
        }
        var stereo: [Float] = []
        bytes.withUnsafeBytes { raw in
            let data = UnsafeRawBufferPointer(rebasing: raw[format.dataOffset..<(format.dataOffset + format.dataLength)])
            WAVParser.appendStereoFloats(from: data, format: format, to: &stereo)
        }
        return (stride(from: 0, to: stereo.count, by: 2).map { stereo[$0] }, format.sampleRate)
    }
}
