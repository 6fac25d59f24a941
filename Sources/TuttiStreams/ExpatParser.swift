import CExpat
import TuttiCore

/// What an XML document says, element by element, to whoever reads it
/// (`FeedBuilder`, the ASX and XSPF readers).
protocol XMLEventHandler: AnyObject {
    /// `name` is `namespace|local` (or `local` outside any namespace).
    func start(_ name: String, attributes: [(String, String)])
    func characters(_ bytes: UnsafeRawBufferPointer)
    func end(_ name: String)
}

/// One expat parser (`XML_Parser`), with namespace processing, that never
/// expands an entity a document declares: a DOCTYPE that declares one
/// (the billion-laughs attack, external entities) stops the parse with
/// `FeedError.entityDeclaration`, and expat's own amplification limit
/// stays on besides. External entities are never loaded (no handler for
/// them). Feed it in pieces with `feed`, then `finish`.
///
/// Thread contract: one thread at a time; the handler is called on it.
final class ExpatParser {
    private let parser: XML_Parser
    private unowned let handler: any XMLEventHandler
    private var refusedEntities = false
    private var fed = 0
    private let maxBytes: Int

    init(handler: any XMLEventHandler, maxBytes: Int = FeedLimits.maxFeedBytes) {
        // "|" between a namespace URI and the local name (a URI cannot hold a bare "|" unescaped in practice, and FeedBuilder splits at the last one).
        parser = XML_ParserCreateNS(nil, XML_Char(UInt8(ascii: "|")))!
        self.handler = handler
        self.maxBytes = maxBytes
        let context = Unmanaged.passUnretained(self).toOpaque()
        XML_SetUserData(parser, context)
        XML_SetElementHandler(parser, { context, name, attributes in
            let me = Unmanaged<ExpatParser>.fromOpaque(context!).takeUnretainedValue()
            var pairs: [(String, String)] = []
            var i = 0
            while let key = attributes?[i], let value = attributes?[i + 1], pairs.count < 64 {
                pairs.append((String(cString: key), String(cString: value)))
                i += 2
            }
            me.handler.start(String(cString: name!), attributes: pairs)
        }, { context, name in
            let me = Unmanaged<ExpatParser>.fromOpaque(context!).takeUnretainedValue()
            me.handler.end(String(cString: name!))
        })
        XML_SetCharacterDataHandler(parser, { context, text, count in
            let me = Unmanaged<ExpatParser>.fromOpaque(context!).takeUnretainedValue()
            guard let text, count > 0 else { return }
            me.handler.characters(UnsafeRawBufferPointer(start: text, count: Int(count)))
        })
        XML_SetEntityDeclHandler(parser, { context, _, _, _, _, _, _, _, _ in
            let me = Unmanaged<ExpatParser>.fromOpaque(context!).takeUnretainedValue()
            me.refusedEntities = true
            XML_StopParser(me.parser, XML_FALSE)
        })
        // Defence in depth: expat ≥ 2.4 stops any document whose expansion exceeds 100× its size.
        _ = XML_SetBillionLaughsAttackProtectionMaximumAmplification(parser, 100)
    }

    deinit { XML_ParserFree(parser) }

    /// Parses the next piece of the document.
    func feed(_ bytes: UnsafeRawBufferPointer) throws(FeedError) {
        fed += bytes.count
        guard fed <= maxBytes else { throw .tooLarge(limit: maxBytes) }
        try parse(bytes, final: false)
    }

    /// Ends the document (an unclosed element is an error here).
    func finish() throws(FeedError) {
        try parse(UnsafeRawBufferPointer(start: nil, count: 0), final: true)
    }

    private func parse(_ bytes: UnsafeRawBufferPointer, final: Bool) throws(FeedError) {
        var offset = 0
        repeat {
            // XML_Parse takes an int count: pieces of at most 1 MiB.
            let count = min(bytes.count - offset, 1 << 20)
            let start = bytes.baseAddress.map { UnsafeRawPointer($0 + offset).assumingMemoryBound(to: CChar.self) }
            let status = XML_Parse(parser, start, Int32(count), final && offset + count == bytes.count ? 1 : 0)
            offset += count
            if status != XML_STATUS_OK {
                if refusedEntities { throw .entityDeclaration }
                let code = XML_GetErrorCode(parser)
                let reason = XML_ErrorString(code).map { String(cString: $0) } ?? "error \(code.rawValue)"
                throw .notXML(reason: reason, line: Int(XML_GetCurrentLineNumber(parser)), column: Int(XML_GetCurrentColumnNumber(parser)))
            }
        } while offset < bytes.count
    }
}

/// Reads a podcast feed (RSS 2.0 with iTunes tags, or Atom) with expat.
///
/// Thread contract: any thread; each call has its own parser.
public enum FeedParser {
    /// Parses a whole feed; throws `FeedError` (not XML, too large,
    /// entities, not a feed, no episodes) and returns nothing partial.
    public static func parse(_ bytes: [UInt8]) throws(FeedError) -> PodcastFeed {
        let reader = FeedEvents()
        let parser = ExpatParser(handler: reader)
        let fed = bytes.withUnsafeBytes { raw in Result { () throws(FeedError) in try parser.feed(raw) } }
        try fed.get()
        try parser.finish()
        return try reader.builder.result()
    }
}

/// `FeedBuilder` behind the handler protocol (expat calls a class).
private final class FeedEvents: XMLEventHandler {
    var builder = FeedBuilder()
    func start(_ name: String, attributes: [(String, String)]) { builder.start(name, attributes: attributes) }
    func characters(_ bytes: UnsafeRawBufferPointer) { builder.characters(bytes) }
    func end(_ name: String) { builder.end(name) }
}
