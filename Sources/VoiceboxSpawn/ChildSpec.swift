/// What a child is started with: its program, arguments, environment, working directory and
/// descriptors. Everything else is clean: an empty signal mask, the default disposition for every
/// signal, and (by default) no other descriptor of ours.
public struct ChildSpec: Sendable {
    /// Where one of the child's standard descriptors comes from or goes.
    public enum Stream: Sendable, Equatable {
        /// /dev/null.
        case null
        /// Ours, as it is.
        case inherit
        /// This descriptor of ours (it stays ours: the child gets a copy).
        case descriptor(Int32)
        /// A pipe whose other end `Spawn.start` hands back (standard input: we write; output: we read).
        case pipe
    }

    public var path: String
    public var arguments: [String]
    /// `KEY=value` entries; nil: this process's environment.
    public var environment: [String]?
    /// Look `path` up on PATH when it has no slash (posix_spawnp).
    public var searchPath = false
    /// The child's working directory; nil: ours. A program run as another user needs one it can
    /// enter (a checkout under a 0700 home is not).
    public var workingDirectory: String?
    public var standardInput: Stream = .null
    public var standardOutput: Stream = .null
    public var standardError: Stream = .null
    /// More descriptors for the child: its number (3 and up) → ours.
    public var descriptors: [Int32: Int32] = [:]
    /// Close every descriptor not named above in the child (the default), as GLib's g_spawn does:
    /// a child must not keep a connection, a pipe or a file of ours open.
    public var closeOtherDescriptors = true

    public init(_ path: String, _ arguments: [String] = [], environment: [String]? = nil) {
        self.path = path
        self.arguments = arguments
        self.environment = environment
    }
}
