import Dispatch

/// A command sent on an `SSIPConnection` whose reply has not come yet.
struct SSIPPendingCommand {
    let handler: SSIPConnection.ReplyHandler
    var deadline: DispatchTime
    /// The deadline moves with every byte received: for replies of unbounded size.
    let inactivity: Bool
    /// SPEAK's text, written when the 230 arrives.
    var text: [UInt8]?
    /// The command line (without SPEAK's text), named only if it goes unanswered.
    let line: [UInt8]
}
