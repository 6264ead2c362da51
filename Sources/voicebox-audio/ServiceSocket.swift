import Dispatch
import Glibc
import VoiceboxContract
import VoiceboxCore

/// The helper's end of the service's socket: an actor on a queue of its own, where the socket is
/// watched (`WatchedSocket`). Requests are read as they come and each handed to `handle`; frames
/// go out whole and in the order they were sent, as the socket takes them. No thread waits on the
/// socket. Past `waitingLimit` bytes not yet taken, a sender waits for room (so a recording's
/// stream keeps only its newest chunks, as it does when its reader is slow). The service closing
/// its end, or taking nothing for `AudioHelperProtocol.writeBound` while frames wait (stuck or
/// gone), ends the helper: the sound server hangs up its streams and recordings with the connection.
actor ServiceSocket {
    /// 256 KiB: 8 s of the microphone's samples.
    static let waitingLimit = 1 << 18

    private nonisolated let executor = QueueExecutor(label: "voicebox-audio.service")
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private let descriptor: Int32
    private var socket: WatchedSocket?
    private var handle: (@Sendable (AudioHelperProtocol.Request) -> Void)?
    private var parser = FrameParser(maximumPayload: AudioHelperProtocol.maximumPayload)
    /// What one read(2) fills, kept from read to read.
    private var chunk = [UInt8](repeating: 0, count: 1 << 16)
    /// Frames not yet taken by the socket: `output` from `written` on.
    private var output: [UInt8] = []
    private var written = 0
    /// Senders waiting for room.
    private var roomWaiters: [CheckedContinuation<Void, Never>] = []

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Starts reading requests; each goes to `handle` (which answers it on a task of its own).
    /// Returns once the socket is watched. Call it off the actor's queue, before anything is sent.
    nonisolated func start(handling handle: @escaping @Sendable (AudioHelperProtocol.Request) -> Void) {
        executor.queue.sync {
            self.assumeIsolated { channel in
                channel.handle = handle
                channel.socket = WatchedSocket(descriptor: channel.descriptor, queue: channel.executor.queue) { [weak channel] event in
                    channel?.assumeIsolated { $0.socketEvent(event) }
                }
            }
        }
    }

    /// Queues `frame` after those sent before (waiting for room first, past `waitingLimit`) and
    /// writes what the socket takes now.
    func send(_ frame: [UInt8]) async {
        while output.count - written >= Self.waitingLimit {
            await withCheckedContinuation { roomWaiters.append($0) }
        }
        let waited = written < output.count
        output += frame
        _ = flush(began: !waited)
    }

    private func socketEvent(_ event: WatchedSocket.Event) {
        switch event {
        case .readable: readRequests()
        case .writable: _ = flush(began: false)
        case .deadline:
            // This queue may have been the late one: what the socket takes now is progress.
            // Nothing taken for writeBound while frames wait: the service is stuck or gone.
            if !flush(began: false) { _exit(0) }
        }
    }

    private func readRequests() {
        let end = parser.readAvailable(from: descriptor, using: &chunk) { tag, payload in
            guard tag == AudioHelperProtocol.Tag.request.rawValue,
                  let request = try? JSON.decode(AudioHelperProtocol.Request.self, from: payload) else {
                return "a malformed request"
            }
            handle?(request)
            return nil
        }
        switch end {
        case nil: return
        case .closed, .failed: _exit(0)  // the service closed its end, or is gone
        case .malformed, .refused: fail("a malformed request from the service", status: 1)
        }
    }

    /// Writes what the socket takes; while frames wait, asks to be told when it takes more, with
    /// writeBound from the last time it took something (`began`: a write begins now). Returns
    /// whether it took something, or had nothing to take.
    private func flush(began: Bool) -> Bool {
        var tookSome = false
        while written < output.count {
            let sent = output[written...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if sent >= 0 {
                written += sent
                tookSome = true
                continue
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK:
                compact()
                if began || tookSome { socket?.schedule(deadline: .now() + AudioHelperProtocol.writeBound.inSeconds) }
                socket?.startWriting()
                return tookSome
            default:
                _exit(0)  // the service is gone
            }
        }
        compact()
        socket?.schedule(deadline: .distantFuture)
        socket?.stopWriting()
        return true
    }

    /// Drops what was written, and lets senders that wait for room go on.
    private func compact() {
        if written == output.count {
            output.removeAll(keepingCapacity: output.count <= 1 << 16)
            written = 0
        } else if written >= 1 << 16 {
            output.removeFirst(written)
            written = 0
        }
        guard output.count - written < Self.waitingLimit else { return }
        let waiters = roomWaiters
        roomWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }
}
