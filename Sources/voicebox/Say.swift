import Foundation
import VoiceboxBus
import VoiceboxInterface

extension SayRequest {
    /// Speak's options.
    var options: VarDict {
        var options = VarDict(["wait": .boolean(wait)])
        if let voice { options["voice"] = .string(voice) }
        if let language { options["language"] = .string(language) }
        if let rate { options["rate"] = .double(rate) }
        if let pitch { options["pitch"] = .double(pitch) }
        if let volume { options["volume"] = .double(volume) }
        if let priority { options["priority"] = .string(priority) }
        if ssml { options["ssml"] = .boolean(true) }
        return options
    }
}

extension Client {
    /// `say`: speaks and (unless --no-wait) waits until spoken. Ctrl-C meanwhile leaves the bus,
    /// which cancels speech the service was waiting on for us.
    func say(_ request: SayRequest) async throws -> ExitStatus {
        if request.wait {
            Interrupts.onInterrupt { _ in exit(ExitStatus.cancelled.rawValue) }
        }
        let id = try await checked { () async throws(DBusError) in
            try await speech.call(Speech1.speak, request.text, request.options, timeout: .seconds(3600))
        }
        if request.json {
            Output.json(["id": id])
        } else if !request.wait {
            Output.line(String(id))
        }
        return .ok
    }
}
