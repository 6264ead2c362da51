import Dispatch
import VoiceboxContract
import VoiceboxThreads

/// Opening the caller's stream, and its first turn: a writer that has sent nothing yet holds
/// neither a turn nor a decoder, so that streams whose writers are silent from the start, however
/// many, delay no other caller's file or stream (each would otherwise keep a core for the
/// `stream-park` wait and its decoder's start).
extension RecognitionRun {
    /// The caller's stream, opened and checked: one that is a regular file is bounded as a file is.
    func open(_ input: StreamInput) throws(VoiceboxError) -> any AudioStream {
        let stream: any AudioStream
        do {
            stream = try dependencies.streams.open(input)
        } catch {
            throw RecognitionFault.describe(error, options: options)
        }
        stream.parking = control.parking.map { Self.blocking($0, bounds: dependencies.bounds) }
        if options.maxSeconds == nil, let duration = stream.duration, duration > RecognizeOptions.maximumSeconds {
            stream.close()
            throw VoiceboxError(.tooLarge, "the stream holds \(Int(duration)) s of audio; the limit is "
                                + "\(Int(RecognizeOptions.maximumSeconds)) s (pass max_seconds to read the beginning)")
        }
        return stream
    }

    /// Whether the writer has sent audio, or ended its stream, so that it is read (true); false
    /// when a stop, a cancel, the caller leaving or the idle bound came first. A writer that has
    /// sent nothing gives the turn and the decoder's place back at once and waits for its writer
    /// on this recognition's own queue (as a parked stream does), then waits for a turn again.
    func waitForFirstAudio(_ stream: any AudioStream) async throws(VoiceboxError) -> Bool {
        do {
            switch try stream.waitForWriter(upTo: .milliseconds(1)) {
            case .audio: return true
            case .stopped: return false
            case .silent: break
            }
            await control.parking?.park()
            await control.parking?.release()
            guard try stream.waitForWriter(upTo: nil) == .audio else { return false }
        } catch {
            throw RecognitionFault.describe(error, options: options)
        }
        return await control.parking?.resume() ?? true
    }

    /// The service's parking, as the stream's reading thread calls it: blocking that thread (the
    /// recognition's own queue, never Swift's shared pool) while the service actor does it. A read
    /// waits `stream-park` for the writer before the stream gives its turn back, and `stream-release`
    /// before it gives its decoder back too (ending the utterance, as a pause in a file does); a
    /// stream that always has audio gives its turn back after each `stream-turn`.
    static func blocking(_ parking: StreamParking, bounds: Bounds) -> AudioStreamParking {
        AudioStreamParking(after: bounds[.streamPark], releaseAfter: bounds[.streamRelease], turn: bounds[.streamTurn], park: {
            let done = DispatchSemaphore(value: 0)
            Task.detached {
                await parking.park()
                done.signal()
            }
            done.wait()
        }, resume: {
            let done = DispatchSemaphore(value: 0)
            let granted = Locked(false)
            Task.detached {
                let result = await parking.resume()
                granted.withLock { $0 = result }
                done.signal()
            }
            done.wait()
            return granted.withLock { $0 }
        })
    }
}
