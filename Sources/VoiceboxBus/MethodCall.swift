import Synchronization

/// An incoming method call. Answer it exactly once, from any thread, now or later; a call
/// dropped unanswered is answered with an error, so no caller waits for nothing.
public final class MethodCall: Sendable {
    public let sender: String
    public let path: String
    public let interface: String
    public let member: String
    public let arguments: [DBusValue]

    private let message: MessageRef
    private let outputSignature: String
    private let loop: EventLoop
    private let answered = Atomic<Bool>(false)

    init(message: MessageRef, interface: String, method: InterfaceDescription.Method, arguments: [DBusValue], loop: EventLoop) {
        self.sender = message.sender ?? ""
        self.path = message.path ?? "/"
        self.interface = interface
        self.member = method.name
        self.arguments = arguments
        self.message = message
        self.outputSignature = method.outputs.map(\.type).joined()
        self.loop = loop
    }

    deinit {
        if !answered.load(ordering: .acquiring) {
            let message = message
            let member = member
            loop.submit { state in
                state.replyError(to: message, .failed("the service dropped the call to \(member) without an answer"))
            }
        }
    }

    private func claim() -> Bool {
        answered.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }

    public func reply(_ values: [DBusValue] = []) {
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

    public func fail(_ error: DBusError) {
        guard claim() else { return }
        let message = message
        loop.submit { $0.replyError(to: message, error) }
    }
}
