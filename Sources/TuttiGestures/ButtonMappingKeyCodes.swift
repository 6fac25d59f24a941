/// Names of Linux input event codes, as in
/// `/usr/include/linux/input-event-codes.h`: the keys a remote, media
/// keyboard or gpio-keys overlay is likely to send, and the relative axes
/// a rotary-encoder overlay reports. Pure data, so the config parser can
/// check names without touching the input layer.

import TuttiCore
public enum LinuxInputCode {
    public static let evSyn: UInt16 = 0x00
    public static let evKey: UInt16 = 0x01
    public static let evRel: UInt16 = 0x02
    public static let synReport: UInt16 = 0
    public static let synDropped: UInt16 = 3
    /// The highest key code the kernel defines (KEY_MAX).
    public static let keyMax: UInt16 = 0x2ff

    /// KEY_* and BTN_* names → codes.
    public static let keys: [String: UInt16] = {
        var k: [String: UInt16] = [
            "KEY_ESC": 1, "KEY_BACKSPACE": 14, "KEY_TAB": 15, "KEY_ENTER": 28, "KEY_SPACE": 57,
            "KEY_HOME": 102, "KEY_UP": 103, "KEY_PAGEUP": 104, "KEY_LEFT": 105, "KEY_RIGHT": 106,
            "KEY_END": 107, "KEY_DOWN": 108, "KEY_PAGEDOWN": 109,
            "KEY_MUTE": 113, "KEY_VOLUMEDOWN": 114, "KEY_VOLUMEUP": 115, "KEY_POWER": 116,
            "KEY_PAUSE": 119, "KEY_STOP": 128, "KEY_AGAIN": 129, "KEY_MENU": 139, "KEY_SLEEP": 142,
            "KEY_WAKEUP": 143, "KEY_PROG1": 148, "KEY_PROG2": 149, "KEY_BOOKMARKS": 156,
            "KEY_BACK": 158, "KEY_FORWARD": 159, "KEY_EJECTCD": 161,
            "KEY_NEXTSONG": 163, "KEY_PLAYPAUSE": 164, "KEY_PREVIOUSSONG": 165, "KEY_STOPCD": 166,
            "KEY_RECORD": 167, "KEY_REWIND": 168, "KEY_PLAYCD": 200, "KEY_PAUSECD": 201,
            "KEY_PROG3": 202, "KEY_PROG4": 203, "KEY_PLAY": 207, "KEY_FASTFORWARD": 208,
            "KEY_MEDIA": 226, "KEY_OK": 0x160, "KEY_SELECT": 0x161, "KEY_INFO": 0x166,
            "KEY_FAVORITES": 0x16c, "KEY_PLAYER": 0x183, "KEY_AUDIO": 0x188,
            "KEY_RED": 0x18e, "KEY_GREEN": 0x18f, "KEY_YELLOW": 0x190, "KEY_BLUE": 0x191,
            "KEY_CHANNELUP": 0x192, "KEY_CHANNELDOWN": 0x193, "KEY_NEXT": 0x197, "KEY_PREVIOUS": 0x19c,
            "KEY_SHUFFLE": 0x19a, "KEY_MEDIA_REPEAT": 0x1b7,
        ]
        // KEY_1 … KEY_9 are 2 … 10 and KEY_0 is 11; F1–F10 are 59–68, F11 87, F12 88.
        for d in 1...9 { k["KEY_\(d)"] = UInt16(1 + d) }
        k["KEY_0"] = 11
        for f in 1...10 { k["KEY_F\(f)"] = UInt16(58 + f) }
        k["KEY_F11"] = 87
        k["KEY_F12"] = 88
        // Letters, for keyboards used as button panels (QWERTY scan-code order).
        let rows: [(String, UInt16)] = [("QWERTYUIOP", 16), ("ASDFGHJKL", 30), ("ZXCVBNM", 44)]
        for (letters, first) in rows {
            for (i, c) in letters.enumerated() { k["KEY_\(c)"] = first + UInt16(i) }
        }
        // BTN_0 … BTN_9 (0x100 …): what gpio-keys overlays often send.
        for b in 0...9 { k["BTN_\(b)"] = 0x100 + UInt16(b) }
        return k
    }()

    private static let keyNames: [UInt16: String] = {
        var n: [UInt16: String] = [:]
        for (name, code) in keys {
            // Keep one name per code, the shortest then alphabetical, so lookups are stable.
            if let old = n[code], (old.count, old) < (name.count, name) { continue }
            n[code] = name
        }
        return n
    }()

    /// The KEY_* name of `code`, or nil if not in the table.
    public static func keyName(_ code: UInt16) -> String? { keyNames[code] }

    /// A key given as a name from the table, or as a number (decimal or
    /// 0x-hex) for codes the table lacks.
    public static func keyCode(_ text: String) -> UInt16? {
        if let code = keys[text] { return code }
        let n: UInt16? = text.hasPrefix("0x") ? UInt16(text.dropFirst(2), radix: 16) : UInt16(text)
        guard let n, n > 0, n <= keyMax else { return nil }
        return n
    }

    /// REL_* names → codes (rotary-encoder overlays report REL_X by default).
    public static let relativeAxes: [String: UInt16] = [
        "REL_X": 0, "REL_Y": 1, "REL_Z": 2, "REL_RX": 3, "REL_RY": 4, "REL_RZ": 5,
        "REL_HWHEEL": 6, "REL_DIAL": 7, "REL_WHEEL": 8, "REL_MISC": 9,
    ]
}
