import CSpeechd
import Glibc
import Synchronization

/// What libspeechd's event thread reports, copied out of its callback arguments.
enum SpeechdNotice: Sendable, Equatable {
    case begin
    case end
    case cancel
    case mark(String)
}

/// Receives the notices of one connection. Implemented by the synthesizer's core, which hops at once to
/// its own serial queue.
protocol SpeechdNoticeReceiver: AnyObject, Sendable {
    func receive(_ notice: SpeechdNotice, messageID: Int, generation: UInt64)
}

/// The one process-wide object that libspeechd's callbacks reach.
///
/// libspeechd calls its callbacks on each connection's own event thread with `(msg_id, client_id,
/// state[, mark])` and no user data, so a callback must find its owner from these arguments alone.
/// Every speaking connection is registered here with its speechd client id (and, to break ties between
/// two speech-dispatcher servers that both handed out the same client id, its event thread).
///
/// Rules for the callbacks (they run on the thread that also delivers every reply):
/// never call `spd_*`, never block for long: look up, copy, hand over, return.
final class SpeechdRouter: Sendable {
    static let shared = SpeechdRouter()

    private struct Entry {
        let token: UInt64
        let clientID: Int
        let eventThread: pthread_t?
        let generation: UInt64
        weak var receiver: (any SpeechdNoticeReceiver)?
    }

    private struct Table {
        var nextToken: UInt64 = 1
        var entries: [Entry] = []
    }

    private let table = Mutex(Table())

    /// libspeechd 0.11 formats several commands in function-local `static char command[64]` buffers
    /// (`spd_set_priority`, which `spd_say` calls; `spd_set_voice_rate`/`pitch`/`volume`;
    /// `spd_set_notification`; the `_uid` variants). Two connections used from two threads at once
    /// would race on them, so every call of those functions, on any connection in this process, is
    /// made while holding this lock. (The voice listing only uses functions that allocate their
    /// command strings and does not need it.)
    let staticBuffers = Mutex(())

    private init() {}

    /// Registers a connection; returns the token to unregister it.
    func register(clientID: Int, eventThread: pthread_t?, generation: UInt64,
                  receiver: any SpeechdNoticeReceiver) -> UInt64 {
        table.withLock { table in
            let token = table.nextToken
            table.nextToken += 1
            table.entries.append(Entry(token: token, clientID: clientID, eventThread: eventThread,
                                       generation: generation, receiver: receiver))
            return token
        }
    }

    func unregister(token: UInt64) {
        table.withLock { table in table.entries.removeAll { $0.token == token } }
    }

    /// Called on a libspeechd event thread.
    func deliver(_ notice: SpeechdNotice, messageID: Int, clientID: Int) {
        let target: (receiver: any SpeechdNoticeReceiver, generation: UInt64)? = table.withLock { table in
            let candidates = table.entries.filter { $0.clientID == clientID && $0.receiver != nil }
            let chosen: Entry?
            if candidates.count <= 1 {
                chosen = candidates.first
            } else {
                let me = pthread_self()
                chosen = candidates.first { entry in entry.eventThread.map { pthread_equal($0, me) != 0 } ?? false }
            }
            guard let chosen, let receiver = chosen.receiver else { return nil }
            return (receiver, chosen.generation)
        }
        if let target {
            target.receiver.receive(notice, messageID: messageID, generation: target.generation)
        }
    }

    // MARK: C entry points (no captures: plain C function pointers)

    static let beginCallback: SPDCallback = { messageID, clientID, _ in
        SpeechdRouter.shared.deliver(.begin, messageID: messageID, clientID: clientID)
    }
    static let endCallback: SPDCallback = { messageID, clientID, _ in
        SpeechdRouter.shared.deliver(.end, messageID: messageID, clientID: clientID)
    }
    static let cancelCallback: SPDCallback = { messageID, clientID, _ in
        SpeechdRouter.shared.deliver(.cancel, messageID: messageID, clientID: clientID)
    }
    static let markCallback: SPDCallbackIM = { messageID, clientID, _, mark in
        // libspeechd frees `mark` when we return: copy it now.
        let name = mark.map { String(cString: $0) } ?? ""
        SpeechdRouter.shared.deliver(.mark(name), messageID: messageID, clientID: clientID)
    }

    /// libspeechd writes to its socket with write(2): if speech-dispatcher has just died, that raises
    /// SIGPIPE, whose default action kills the whole process. Ignore it (only if nobody installed a
    /// handler), once per process.
    static let sigpipeIgnored: Bool = {
        var current = sigaction()
        guard sigaction(SIGPIPE, nil, &current) == 0 else { return false }
        if current.__sigaction_handler.sa_handler == nil { // SIG_DFL
            var ignore = sigaction()
            ignore.__sigaction_handler.sa_handler = SIG_IGN
            sigemptyset(&ignore.sa_mask)
            return sigaction(SIGPIPE, &ignore, nil) == 0
        }
        return true
    }()
}
