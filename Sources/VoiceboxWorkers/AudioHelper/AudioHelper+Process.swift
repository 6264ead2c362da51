import Dispatch
import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxSpawn

extension AudioHelper {
    /// One running helper: the process and the service's end of its socket (`FramedSocket`,
    /// whose timer is the write deadline). No thread waits on it.
    ///
    /// Not Sendable: the compiler keeps it in the actor. Its readiness only tells the actor
    /// (`WatchedSocket.Event`, with the process's generation), which enters its isolation with
    /// `assumeIsolated` and calls back in here. Dropped (the actor gone), its socket closes,
    /// which ends the helper.
    final class Process {
        typealias End = FramedSocket.End

        let child: Child
        let generation: UInt64
        let started = ContinuousClock.now
        private let socket: FramedSocket
        /// How long the frame at the head of the output may take to be taken (helper-write).
        private let writeBound: Duration
        var isOpen: Bool { socket.isOpen }

        /// `socket` is made non-blocking; `events` is called on `queue` for each readiness (its
        /// `.deadline`: the head frame's write deadline).
        init(child: Child, socket: Int32, generation: UInt64, queue: DispatchQueue, writeBound: Duration,
             events: @escaping @Sendable (WatchedSocket.Event) -> Void) {
            self.child = child
            self.socket = FramedSocket(descriptor: socket, maximumPayload: AudioHelperProtocol.maximumPayload,
                                       queue: queue, events: events)
            self.generation = generation
            self.writeBound = writeBound
        }

        /// Hangs up (the helper reads the end and exits) and stops watching.
        func close() { socket.close() }

        /// Reads what the socket has (`FramedSocket.read`).
        func read(_ deliver: (UInt8, [UInt8]) -> String?) -> End? { socket.read(deliver) }

        /// Queues `frame` and writes what the socket takes now; false if the socket failed (the
        /// helper is gone). The rest goes as the socket takes it.
        func send(_ frame: [UInt8]) -> Bool { watchingTheHead(socket.send(frame)) }

        /// Writes what the socket takes; false if it failed.
        func flush() -> Bool { watchingTheHead(socket.flush()) }

        /// Whether the frame at the head of the output has waited helper-write to be taken.
        var writeIsLate: Bool {
            socket.isWaitingToWrite && DispatchTime.now() >= socket.headSince + writeBound.inSeconds
        }

        /// Sets the timer to the head frame's deadline again (after one that was not late).
        func armWriteTimer() {
            socket.schedule(deadline: socket.isWaitingToWrite ? socket.headSince + writeBound.inSeconds : .distantFuture)
        }

        /// While output waits, the timer is the head frame's deadline (it moves on as frames are
        /// taken; one found late kills the helper).
        private func watchingTheHead(_ ok: Bool) -> Bool {
            armWriteTimer()
            return ok
        }
    }
}
