import Foundation
import VoiceboxSpawn
@testable import VoiceboxWorkers

/// Runs `voicebox-worker probe-confinement ARGUMENTS` (the file worker's confinement, or with a
/// `decoder:` argument the decoder worker's) and returns how it ended and what it said: the file
/// and decoder workers' confinement tests ask it the same way.
func probeConfinement(_ workerPath: String, _ arguments: [String]) throws -> (Termination, String) {
    var spec = ChildSpec(workerPath, ["probe-confinement"] + arguments, environment: WorkerAudioFile.environment)
    spec.standardOutput = .pipe
    let ending = try Spawn.run(spec, timeout: .seconds(10))
    return (ending.termination, String(decoding: ending.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
}
