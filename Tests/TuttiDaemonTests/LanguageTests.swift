import Foundation
import Testing
import TuttiControlClient
import TuttiControlKit
import TuttiCore
import TuttiNet
import TuttiTestSupport

/// The message catalogue at work: `tutti` speaks the locale's language, and
/// the leader answers a JSON-RPC request in the language it asks for (its
/// `lang`, or HTTP's `Accept-Language` on `POST /api`), English otherwise.
@Suite(.serialized) struct LanguageTests {
    /// A locale for the child alone: the test's own LC_ALL or LANGUAGE must not win.
    static func locale(_ lang: String) -> [String: String] { ["LANG": lang, "LC_ALL": "", "LC_MESSAGES": "", "LANGUAGE": ""] }

    static func tutti(port: UInt16, locale: String, _ args: [String]) throws -> (status: Int32, out: String) {
        let binary = URL(fileURLWithPath: DaemonBinaryTests.binary).deletingLastPathComponent().appendingPathComponent("tutti").path
        let r = try runProcess(binary, ["--port", String(port)] + args, environment: Self.locale(locale))
        return (r.status, r.output)
    }

    @Test func tuttiSaysTheLeadersRefusalInTheLocalesLanguage() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/one.wav", wavImage(counterFrames(count: 48_000 * 5)))
        let leader = try startLeader(files: [dir + "/one.wav"]) { c in c.control = Endpoint(host: "127.0.0.1", port: 0) }
        defer { leader.stop() }
        let office = try startFollower(leader: leader.endpoint, name: "office", output: .file(path: dir + "/o.raw", ppm: 0, delayMilliseconds: 0))
        defer { office.stop() }
        #expect(waitUntil(timeout: 5) { leader.followerNames == ["office"] })
        let port = try #require(leader.controlEndpoint).port

        // A bad room: the leader's refusal, in Korean because tutti asked for it.
        let korean = try Self.tutti(port: port, locale: "ko_KR.UTF-8", ["group", "leave", "attic"])
        #expect(korean.status == 1, "\(korean.out)")
        #expect(korean.out == "tutti: 'attic'(이)라는 방이 없습니다\n", "\(korean.out)")
        let english = try Self.tutti(port: port, locale: "C.UTF-8", ["group", "leave", "attic"])
        #expect(english.status == 1 && english.out == "tutti: no room 'attic'\n", "\(english.out)")
        // An unknown group, with the groups there are.
        let group = try Self.tutti(port: port, locale: "ko_KR.UTF-8", ["group", "add", "Loft", "office"])
        #expect(group.status == 1 && group.out.contains("'Loft'(이)라는 그룹이 없습니다 (그룹: "), "\(group.out)")
        // tutti's own failures: a leader it cannot reach, an address it cannot read.
        let unreachable = try Self.tutti(port: 1, locale: "ko_KR.UTF-8", ["status"])
        #expect(unreachable.status == 2 && unreachable.out.contains("127.0.0.1:1의 리더에 연결할 수 없습니다"), "\(unreachable.out)")
        let binary = URL(fileURLWithPath: DaemonBinaryTests.binary).deletingLastPathComponent().appendingPathComponent("tutti").path
        let badHost = try runProcess(binary, ["--host", "pi:notaport", "status"], environment: Self.locale("ko_KR.UTF-8"))
        #expect(badHost.status == 64 && badHost.output.contains("--host pi:notaport: HOST 또는 HOST:PORT 형식이어야 합니다"), "\(badHost.output)")
        // A command line it cannot read.
        let usage = try Self.tutti(port: port, locale: "ko_KR.UTF-8", ["vol", "office", "loud"])
        #expect(usage.status == 64 && usage.out == "tutti: vol에는 ROOM과 0–100 사이의 음량이 필요합니다\n", "\(usage.out)")
        let usageEnglish = try Self.tutti(port: port, locale: "en_GB.UTF-8", ["vol", "office", "loud"])
        #expect(usageEnglish.status == 64 && usageEnglish.out == "tutti: vol needs ROOM and a volume 0–100\n", "\(usageEnglish.out)")
        // tuttid that cannot start (the speaker port is this leader's) says so in the locale's language.
        let taken = try runProgram(DaemonBinaryTests.binary, ["leader", "--listen", "127.0.0.1:\(leader.endpoint.port)", "--control", "off", "--mpd", "off",
                                                               "--web", "off", "--play", dir + "/one.wav"],
                                   environment: Self.locale("ko_KR.UTF-8"), timeout: 20, stopAtTimeout: true)
        #expect(taken.status == 1 && taken.err.hasPrefix("tuttid: 시작할 수 없습니다: "), "\(taken.status): \(taken.err)")
        // What it prints is in the locale's language too, its help as well.
        let rooms = try Self.tutti(port: port, locale: "ko_KR.UTF-8", ["rooms"])
        #expect(rooms.status == 0 && rooms.out.hasPrefix("office: 음량 "), "\(rooms.out)")
        #expect(try Self.tutti(port: port, locale: "C.UTF-8", ["rooms"]).out.hasPrefix("office: volume "))
        let help = try Self.tutti(port: port, locale: "ko_KR.UTF-8", ["--help"])
        #expect(help.status == 0 && help.out.hasPrefix("사용법: tutti "), "\(help.out)")
        // What succeeds is unchanged.
        #expect(try Self.tutti(port: port, locale: "ko_KR.UTF-8", ["group", "leave", "office"]).status == 0)
    }

    @Test func theLeaderAnswersInTheRequestsLanguage() throws {
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: WebAppTests.repository + "/web")
        }
        defer { leader.stop() }
        let client = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        func refusal(_ method: String, _ params: [String: JSONValue]) -> String? {
            do { _ = try client.call(method, params); return nil } catch let e as ControlClient.RemoteError { return e.message } catch { return "\(error)" }
        }
        #expect(refusal("groups.delete", ["group": "main"]) == "the main group cannot be deleted (rooms nobody placed play it)")
        client.language = .korean
        #expect(refusal("groups.delete", ["group": "main"]) == "기본 그룹은 삭제할 수 없습니다 (아무 그룹에도 넣지 않은 방이 이 그룹을 재생합니다)")
        #expect(refusal("rooms.set", ["room": "den", "volume": 400]) == "volume 400.0이(가) 범위 0.0…100.0을(를) 벗어났습니다")
        #expect(refusal("no.such", [:]) == "알 수 없는 메서드 'no.such'입니다 (docs/api.md 참고)")
        // Announcements and channel maps name an unknown room as every other request does.
        #expect(refusal("announce", ["rooms": ["attic"], "text": "hi"]) == "'attic'(이)라는 방이 없습니다")
        #expect(refusal("rooms.setChannels", ["room": "attic", "channels": "left"]) == "'attic'(이)라는 방이 없습니다")
        // The player's refusals (PlayerError), channel maps' and the equaliser's come from the catalogue too.
        #expect(refusal("player.next", [:]) == "대기열이 비어 있습니다")
        #expect(refusal("queue.play", ["index": 3]) == "대기열에 3번 항목이 없습니다 (대기열에는 0개가 있습니다)")
        #expect(refusal("rooms.setChannels", ["room": "attic", "channels": "sideways"])?.hasPrefix("'sideways'은(는) 채널 맵이 아닙니다") == true)
        #expect(refusal("rooms.unpair", ["room": "Living"]) == "'Living'(이)라는 스테레오 페어가 없습니다 (페어가 하나도 없습니다)")
        #expect(refusal("eq.delete", ["name": "Flat"]) == "'Flat'은(는) 기본 프리셋입니다. 다른 이름으로 저장하세요")
        #expect(refusal("library.search", ["query": "x"]) == "음악 라이브러리가 없습니다. 리더를 --music DIR(또는 --db PATH)로 시작하세요")
        // A URL the leader does not fetch from (this machine), and a file outside its folders.
        #expect(refusal("queue.add", ["uris": ["http://127.0.0.1:9/live.mp3"]])
                == "http://127.0.0.1:9/live.mp3: 127.0.0.1에서 가져오기를 거부했습니다: 이 컴퓨터(리더 자신의 주소)입니다. 이 컴퓨터와 집 네트워크의 스트림을 재생하려면 tutti.conf [leader]에 local-streams = yes를 설정하세요 (또는 --allow-local-streams)")
        #expect(refusal("queue.add", ["uris": ["/etc/passwd"]])
                == "/etc/passwd은(는) 음악 폴더, 캐시, 재생 목록 폴더 밖에 있습니다. 클라이언트는 이 폴더들 안의 파일만 지정할 수 있습니다")
        // An announcement refused before anything plays.
        #expect(refusal("announce", ["rooms": "all", "text": "", "volume": 0.5]) == "안내 방송 문구가 비어 있습니다")
        #expect(refusal("announce", ["rooms": "all", "text": "Dinner", "duck_db": 6]) == "duck_db 6.0이(가) −60…0 dB 범위를 벗어났습니다")
        client.language = .english
        #expect(refusal("announce", ["rooms": "all", "text": ""]) == "the announcement's text is empty")
        #expect(refusal("no.such", [:]) == "unknown method 'no.such' (see docs/api.md)")
        #expect(refusal("player.next", [:]) == "the queue is empty")
        #expect(refusal("eq.delete", ["name": "Flat"]) == "'Flat' is a built-in preset: save yours under another name")
        #expect(refusal("rooms.unpair", ["room": "Living"]) == "no stereo pair 'Living' (there are none)")
        #expect(refusal("queue.add", ["uris": ["http://127.0.0.1:9/live.mp3"]])
                == "http://127.0.0.1:9/live.mp3: refused to fetch from 127.0.0.1: it is this machine (the leader's own address); set local-streams = yes in tutti.conf [leader] (or --allow-local-streams) to play streams from this machine and the home network")

        // POST /api: Accept-Language when the request has no lang; its lang when it has.
        let web = try #require(leader.webEndpoint).port
        let body = #"{"jsonrpc":"2.0","id":1,"method":"groups.separate","params":{"room":"attic"}}"#
        func post(_ body: String, _ accept: String) -> String {
            httpRequest(port: web, "POST", "/api", headers: [("Content-Type", "application/json"), ("Accept-Language", accept)], body: body)
        }
        #expect(post(body, "ko-KR,ko;q=0.9,en;q=0.8").contains("'attic'(이)라는 방이 없습니다"))
        #expect(post(body, "en-GB,en;q=0.9").contains("no room 'attic'"))
        let asked = #"{"jsonrpc":"2.0","id":1,"lang":"en","method":"groups.separate","params":{"room":"attic"}}"#
        #expect(post(asked, "ko").contains("no room 'attic'"), "the request's own lang wins")
    }
}
