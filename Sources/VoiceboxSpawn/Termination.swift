import Glibc

/// How a child ended, decoded once from its wait status.
public enum Termination: Sendable, Equatable, CustomStringConvertible {
    /// It called exit with this status.
    case exited(Int32)
    /// A signal ended it (SIGSEGV, SIGABRT, SIGKILL: a crash, abort, or the kernel's OOM killer).
    case signalled(Int32)
    /// Someone else reaped it (this process ignores SIGCHLD, or another waitpid took it).
    case unknown

    /// From waitpid's status word.
    public init(waitStatus status: Int32) {
        if status & 0x7f == 0 {
            self = .exited((status >> 8) & 0xff)
        } else {
            self = .signalled(status & 0x7f)
        }
    }

    /// A shell's `$?`: the exit status, or 128 + the signal; -1 when unknown.
    public var shellStatus: Int32 {
        switch self {
        case .exited(let code): code
        case .signalled(let signal): 128 + signal
        case .unknown: -1
        }
    }

    public var signal: Int32? {
        if case .signalled(let signal) = self { return signal }
        return nil
    }

    public var succeeded: Bool { self == .exited(0) }

    /// "exited with status 3", "killed by SIGSEGV (Segmentation fault)".
    public var description: String {
        switch self {
        case .exited(let code): "exited with status \(code)"
        case .signalled(let signal): "killed by \(Self.name(of: signal)) (\(String(cString: strsignal(signal))))"
        case .unknown: "ended (its status was taken elsewhere)"
        }
    }

    /// "SIGSEGV" for 11; "signal 40" for one without a name.
    public static func name(of signal: Int32) -> String {
        typealias Abbreviation = @convention(c) (Int32) -> UnsafePointer<CChar>?
        // sigabbrev_np: glibc 2.32 and later, a GNU extension Swift's Glibc module does not import.
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sigabbrev_np"),
           let name = unsafeBitCast(symbol, to: Abbreviation.self)(signal) {
            return "SIG" + String(cString: name)
        }
        return "signal \(signal)"
    }
}

/// An errno value from posix_spawn, with its text.
public struct Errno: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: Int32
    public init(_ code: Int32) { self.code = code }
    public var description: String { String(cString: strerror(code)) }
}

/// A child that could not be started: what was tried and why not.
public struct SpawnError: Error, Sendable, Equatable, CustomStringConvertible {
    public let path: String
    public let errno: Errno
    /// "cannot run /usr/bin/xdotool: No such file or directory".
    public var description: String { "cannot run \(path): \(errno)" }
}
