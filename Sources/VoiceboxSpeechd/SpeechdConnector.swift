import Glibc
import VoiceboxCore

/// Opens the socket to speech-dispatcher, starting the server first when nobody listens and autospawn
/// is allowed. Blocking (getaddrinfo, and a spawn waits up to `speechd-start`, 20 s, for the server to
/// be ready): run it off the owner queue and hand the socket over.
enum SpeechdConnector {
    /// `spawnWithin`: how long a server started here may take to be ready; nil never starts one.
    static func open(address configured: String?, spawnWithin start: Duration?) -> Result<SSIPSocket.Opened, SynthesizerError> {
        let address: SpeechdAddress
        switch SpeechdAddress.resolve(configured) {
        case .success(let resolved): address = resolved
        case .failure(let error): return .failure(error)
        }
        switch SSIPSocket.open(address) {
        case .success(let opened):
            return .success(opened)
        case .failure(.other(let reason)):
            return .failure(.unavailable(reason))
        case .failure(.noServer(let reason)):
            guard let start else { return .failure(.unavailable(reason)) }
            if let spawnError = SpeechdSpawner.spawn(for: address, within: start) {
                return .failure(.unavailable("\(reason). Autospawn: \(spawnError)"))
            }
            return SSIPSocket.open(address).mapError { .unavailable($0.reason) }
        }
    }

    /// `SET SELF CLIENT_NAME user:client:component`, as libspeechd names its clients.
    static func clientNameCommand(client: String, component: String) -> [UInt8] {
        let user = getpwuid(geteuid()).flatMap { $0.pointee.pw_name.map { String(cString: $0) } }
            ?? ProcessEnvironment.value("USER") ?? "unknown"
        // The name is one SSIP word of three colon-separated parts.
        let clean = { (part: String) in String(part.map { $0 == " " || $0 == ":" ? "_" : $0 }) }
        return SSIPText.command("SET", "self", "CLIENT_NAME", "\(clean(user)):\(clean(client)):\(clean(component))")
    }
}
