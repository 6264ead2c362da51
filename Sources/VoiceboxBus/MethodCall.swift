import Glibc
import Synchronization
import VoiceboxContract

/// An incoming method call. Answer it exactly once, from any thread, now or later; a call
/// dropped unanswered is answered with an error, so no caller waits for nothing.
///
/// The unix descriptors that came with it (libdbus hands out duplicates) belong to the call and
/// are closed when it is answered: a handler that needs one for longer duplicates it.
final class MethodCall: Sendable {
    let sender: String
    let member: String
    let arguments: [DBusValue]

    private let message: MessageRef
    private let outputSignature: String
    private let loop: EventLoop
    private let answered = Atomic<Bool>(false)
    private let descriptors: [Int32]

    init(message: MessageRef, method: InterfaceDescription.Method, arguments: [DBusValue], descriptors: [Int32],
         loop: EventLoop) {
        self.sender = message.sender ?? ""
        self.member = method.name
        self.arguments = arguments
        self.descriptors = descriptors
        self.message = message
        self.outputSignature = method.outputs.map(\.type).joined()
        self.loop = loop
    }

    deinit {
        if claim() {
            let message = message
            let member = member
            loop.submit { state in
                state.replyError(to: message, .failed("the service dropped the call to \(member) without an answer"))
            }
        }
    }

    /// True for the first answer only; it also closes the call's descriptors.
    private func claim() -> Bool {
        guard answered.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            return false
        }
        for descriptor in descriptors { close(descriptor) }
        return true
    }

    func reply(_ values: [DBusValue] = []) {
        guard claim() else { return }
        let message = message
        let signature = values.map(\.type.signature).joined()
        guard signature == outputSignature else {
            busLog("\(member) answered with (\(signature)) instead of (\(outputSignature))")
            loop.submit { $0.replyError(to: message, .failed("the service produced an invalid reply")) }
            return
        }
        loop.submit { $0.reply(to: message, values) }
    }

    func fail(_ error: DBusError) {
        guard claim() else { return }
        let message = message
        loop.submit { $0.replyError(to: message, error) }
    }
}
