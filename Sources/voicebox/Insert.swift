import Foundation
import VoiceboxInsertion

/// `insert` and dictate's outputs: text into the focused window, through VoiceboxInsertion.
enum Insertion {
    /// Inserts `text`; a missing program or no graphical session is exit status 3.
    static func insert(_ text: String, mode: InsertionMode, typer: Typer?) throws(Failure) {
        do {
            if let note = try Inserter.insert(text, mode: mode, typer: typer) { Output.error(note) }
        } catch {
            switch error {
            case .missingProgram, .noSession: throw Failure(error.description, .cannotInsert)
            case .failed: throw Failure(error.description, .refused)
            }
        }
    }

    /// `insert TEXT`: no service needed.
    static func run(_ request: InsertRequest) -> ExitStatus {
        do {
            try insert(request.text, mode: request.mode, typer: request.typer)
            return .ok
        } catch {
            Output.error(error.message)
            return error.status
        }
    }
}
