import Foundation
import Testing
import TuttiTestSupport

/// The faults that fit in seconds (Tests/Faults/faults.py; bench/faults runs
/// them with 100 power cuts): kill -9 of a playing leader brings back its
/// queue, position (within 1 s), volume, EQ, groups and party mode, and the
/// speaker rejoins within 3 s; a killed speaker is back within 2 s; 10 power
/// cuts leave both databases intact and lose no acknowledged save; damaged
/// databases are moved aside and rebuilt; an unplugged music disk stops
/// play without losing the queue or library, and play goes on when it is back;
/// a full disk stops saving (said once) but not playing, and saving resumes;
/// a speaker whose DAC is missing or unplugged waits for it and plays on in step.
@Suite(.serialized) struct FaultTests {
    @Test func theLeaderAndItsSpeakersSurviveKillsPowerCutsAndDamagedDatabases() throws {
        let script = WebAppTests.repository + "/Tests/Faults/faults.py"
        let r = try runProgram("/usr/bin/python3", [script, "--tuttid", DaemonBinaryTests.binary, "--power-cuts", "10"], mergeErrors: true, timeout: 240)
        print(r.out)
        #expect(r.status == 0, "a fault case failed:\n\(r.out)")
        for name in ["leader-kill", "speaker-kill", "power-cut", "damaged-db", "music-gone", "disk-full", "dac-gone"] {
            #expect(r.out.contains(name + " ") && !r.out.contains(name + "  FAIL"), "\(name): \(r.out)")
        }
        // A full disk is made with a small tmpfs, which needs root (CI has it).
        if getuid() == 0 { #expect(!r.out.contains("disk-full     SKIP"), "\(r.out)") }
        #expect(!r.out.contains("dac-gone      SKIP"), "scripts/setup.sh installs pulseaudio and libasound2-plugins: \(r.out)")
    }
}
