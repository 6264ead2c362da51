import Glibc

/// Opens a non-blocking stream socket to speech-dispatcher. Blocking only in getaddrinfo(3) for an
/// inet host name, so callers run it off the owner queue.
enum SSIPSocket {
    struct Opened: Sendable {
        let descriptor: Int32
        /// connect(2) said EINPROGRESS (inet): writability will tell how it ended.
        let connecting: Bool
    }

    enum Failure: Error {
        /// Nobody listens there (ENOENT, ECONNREFUSED): autospawn may help.
        case noServer(String)
        case other(String)

        var reason: String {
            switch self { case .noServer(let reason), .other(let reason): reason }
        }
    }

    static func open(_ address: SpeechdAddress) -> Result<Opened, Failure> {
        switch address {
        case .unixSocket(let path): openUnix(path)
        case .inetSocket(let host, let port): openInet(host, port)
        }
    }

    private static func openUnix(_ path: String) -> Result<Opened, Failure> {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            return .failure(.other("the socket path \(path) is too long"))
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(.other("socket: \(errorText())")) }
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return finish(fd, result, "\(path)")
    }

    private static func openInet(_ host: String, _ port: Int32) -> Result<Opened, Failure> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            return .failure(.other("cannot resolve \(host): \(String(cString: gai_strerror(status)))"))
        }
        defer { freeaddrinfo(list) }
        var last: Failure = .other("no address for \(host)")
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            entry = current.pointee.ai_next
            let fd = socket(current.pointee.ai_family,
                            current.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                            current.pointee.ai_protocol)
            guard fd >= 0 else { continue }
            switch finish(fd, connect(fd, current.pointee.ai_addr, current.pointee.ai_addrlen), "\(host):\(port)") {
            case .success(let opened): return .success(opened)
            case .failure(let failure): last = failure
            }
        }
        return .failure(last)
    }

    private static func finish(_ fd: Int32, _ result: Int32, _ place: String) -> Result<Opened, Failure> {
        if result == 0 { return .success(Opened(descriptor: fd, connecting: false)) }
        let code = errno
        if code == EINPROGRESS { return .success(Opened(descriptor: fd, connecting: true)) }
        close(fd)
        let reason = "cannot connect to speech-dispatcher at \(place): \(String(cString: strerror(code)))"
        return .failure(code == ENOENT || code == ECONNREFUSED ? .noServer(reason) : .other(reason))
    }

    static func errorText() -> String { String(cString: strerror(errno)) }
}
