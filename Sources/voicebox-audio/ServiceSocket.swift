import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxThreads

/// The helper's end of the service's socket, for writing: frames go out whole, one at a time.
/// A service that takes nothing for `writeBound` is stuck or gone: the helper ends.
final class ServiceSocket: Sendable {
    /// The descriptor, behind the lock that keeps frames whole. (Not `Locked<Void>`: ThreadSanitizer
    /// reports accesses to a zero-sized value under the lock as races.)
    private let writing: Locked<Int32>

    init(descriptor: Int32) {
        writing = Locked(descriptor)
    }

    func send(_ frame: [UInt8]) {
        let failed = writing.withLock { descriptor in
            FrameReader.write(frame, to: descriptor, until: .now + AudioHelperProtocol.writeBound)
        }
        if failed != nil { _exit(0) }
    }
}

/// Reads the service's requests on a thread of its own; the service closing its end ends the helper
/// (the server hangs up its streams and recordings with the connection).
final class RequestReader: Sendable {
    private let descriptor: Int32
    private let handle: @Sendable (AudioHelperProtocol.Request) -> Void

    init(descriptor: Int32, handle: @escaping @Sendable (AudioHelperProtocol.Request) -> Void) {
        self.descriptor = descriptor
        self.handle = handle
    }

    func start() {
        let descriptor = descriptor, handle = handle
        OwnThread.start(name: "requests") {
            var reader = FrameReader(descriptor: descriptor, maximumPayload: AudioHelperProtocol.maximumPayload)
            while true {
                guard case .frame(let tag, let payload) = reader.next(within: nil) else { _exit(0) }
                guard tag == AudioHelperProtocol.Tag.request.rawValue,
                      let request = try? JSON.decode(AudioHelperProtocol.Request.self, from: payload) else {
                    fail("a malformed request from the service", status: 1)
                }
                handle(request)
            }
        }
    }
}
