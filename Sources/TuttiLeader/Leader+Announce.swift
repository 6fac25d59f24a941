import TuttiCore
import TuttiDiscovery
import TuttiControlKit

extension Leader {
    /// Announces this leader over mDNS: its follower port, and in TXT the
    /// protocol version, control and MPD ports and a stable id. Never fails
    /// the leader: without Avahi it logs one warning and goes on (the
    /// publisher announces by itself once avahi-daemon appears).
    func startAnnouncing() {
        let port = endpoint.port
        let name = configuration.announceName ?? TuttiService.defaultName
        let ports = surfaces?.announcedPorts
        let txt = TuttiService.txt(controlPort: ports?.control, mpdPort: ports?.mpd,
                                   id: TuttiService.stableLeaderID(port: port), keyFingerprint: speakerSecurity.fingerprint)
        do {
            announcer = try ServicePublisher(name: name, port: port, txt: txt, log: log.with(label: "mdns"))
        } catch {
            log.warning("not announcing over mDNS: \(error)")
        }
        for service in surfaces?.announcedServices ?? [] {
            do {
                surfaceAnnouncers.append(try ServicePublisher(name: name, port: service.port, txt: service.txt,
                                                              type: service.type, log: log.with(label: "mdns")))
            } catch {
                log.warning("not announcing \(service.type) over mDNS: \(error)")
            }
        }
        // As snapserver does, so a snapclient started without a host finds this leader.
        if let snap = snapcastEndpoint {
            do {
                snapcastAnnouncer = try ServicePublisher(name: name, port: snap.port, type: "_snapcast._tcp", log: log.with(label: "mdns"))
            } catch {
                log.warning("not announcing _snapcast._tcp over mDNS: \(error)")
            }
        }
    }
}
