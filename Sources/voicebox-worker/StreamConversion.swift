import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxSamplerate

/// `audio-stream`: reads a caller's raw stream on standard input, converts it to 16 kHz mono
/// (`PCMConverter`: unpacked, resampled by libsamplerate) and sends the samples as soon as each
/// read makes some, then `E`, or `F` with why the stream cannot be read.
enum StreamConversion {
    static func run(_ options: [String: String]) -> Never {
        guard let parent = options["parent"].flatMap({ pid_t($0) }),
              let encoding = options["encoding"].flatMap(StreamInput.Encoding.init(rawValue:)),
              let rate = options["rate"].flatMap({ Int($0) }), StreamInput.rates.contains(UInt32(clamping: rate)),
              let channels = options["channels"].flatMap({ Int($0) }), (1...Int(StreamInput.maximumChannels)).contains(channels)
        else {
            fail("audio-stream needs --parent PID --encoding s16le|f32le --rate HZ --channels N [--offset BYTES]", status: 64)
        }
        var offset = options["offset"].flatMap { off_t($0) }
        if let why = Confinement.apply(parent: parent) {
            send(WorkerProtocol.failure("the stream's converter cannot confine itself (\(why))"))
            exit(1)
        }
        do {
            var converter = try PCMConverter(encoding: encoding, rate: rate, channels: channels)
            var buffer = [UInt8](repeating: 0, count: 65_536)
            var reset = false
            while true {
                let got = buffer.withUnsafeMutableBytes { raw in
                    if let offset { pread(0, raw.baseAddress, raw.count, offset) } else { read(0, raw.baseAddress, raw.count) }
                }
                if got < 0 {
                    switch errno {
                    case EINTR: continue
                    case EAGAIN:
                        // The caller's socket is non-blocking (its description is shared): wait here.
                        var ready = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
                        _ = poll(&ready, 1, -1)
                        continue
                    case ECONNRESET:
                        // The writer went away by resetting its connection: the stream ended as a
                        // close ends it, only without a chance to finish its last frame.
                        reset = true
                    case let code:
                        throw RecognitionError.invalidStream("reading it failed: \(String(cString: strerror(code)))")
                    }
                }
                if got <= 0 { break }
                offset? += off_t(got)
                sendSamples(try converter.convert(buffer[0..<got]))
            }
            sendSamples(try converter.finish(reset: reset))
            send(WorkerProtocol.encode(.end))
        } catch RecognitionError.invalidStream(let why) {
            send(WorkerProtocol.failure(why))
        } catch {
            send(WorkerProtocol.failure("\(error)"))
        }
        exit(0)
    }
}
