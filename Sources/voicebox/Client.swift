import VoiceboxBus
import VoiceboxContract

/// The connection to the service and the subcommands' dispatch.
struct Client: Sendable {
    let connection: BusConnection
    let speech: BusProxy

    static func connect(address: String?) throws(Failure) -> Client {
        do throws(DBusError) {
            let connection: BusConnection
            if let address {
                connection = try BusConnection(address: address)
            } else {
                connection = try BusConnection.session()
            }
            return Client(connection: connection, speech: Speech1.proxy(connection))
        } catch {
            throw Failure("the session bus cannot be reached" + (error.message.isEmpty ? "" : ": \(error.message)"), .unavailable)
        }
    }

    func run(_ command: Command) async throws -> ExitStatus {
        switch command {
        case .help, .version: .ok
        case .insert(let request): await Insertion.run(request)
        case .say(let request): try await say(request)
        case .voices(let language, let json): try await voices(language, json: json)
        case .listen(let request): try await listen(request)
        case .stop(let target): try await stop(target)
        case .pause: try await pause()
        case .resume: try await resume()
        case .status(let json): try await status(json: json)
        case .monitor: try await monitor()
        case .dictate(let request): try await dictate(request)
        }
    }

    /// Runs one call; a D-Bus error becomes a Failure (one sentence, its exit status).
    @discardableResult
    func checked<T>(_ body: () async throws(DBusError) -> T) async throws(Failure) -> T {
        do {
            return try await body()
        } catch {
            throw Failure(error)
        }
    }
}
