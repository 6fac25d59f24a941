import TuttiNet

/// Where the web app is served, and from which files.
public struct WebOptions: Sendable, Equatable {
    public var endpoint: Endpoint
    /// Asked for explicitly: failing to serve it stops the leader. The
    /// default port, when taken, is skipped with a warning instead.
    public var required: Bool
    /// The web app's files (nil: found beside the executable, or /usr/share/tutti/web).
    public var root: String?
    public init(endpoint: Endpoint, required: Bool = true, root: String? = nil) {
        self.endpoint = endpoint
        self.required = required
        self.root = root
    }
}
