import CPulse
import Glibc
import VoiceboxContract
import VoiceboxCore

/// The server's memory of stream settings, through libpulse's ext-stream-restore: PulseAudio's
/// module-stream-restore answers all of it; pipewire-pulse (0.3.65) hands a write on to WirePlumber's
/// restore-stream through the "route-settings" metadata and lists only what clients wrote there.
extension MixerConnection {
    func rememberedSettings() async throws -> [RememberedSetting] {
        try await request("read the server's stream memory", initial: [RememberedSetting]()) { context, user in
            pa_ext_stream_restore_read(context, { context, info, eol, user in
                let request = Request<[RememberedSetting]>.from(user)
                if eol == 0, let info { return request.value.append(RememberedSetting(info.pointee)) }
                request.finish(eol < 0 ? .unsupported("ext-stream-restore: \(MixerConnection.describe(pa_context_errno(context)))") : nil)
            }, user)
        }
    }

    /// Replaces the entries, applying nothing to streams playing now.
    func writeRemembered(_ settings: [RememberedSetting]) async throws {
        guard !settings.isEmpty else { return }
        let code = try await request("write the server's stream memory", initial: Int32(0)) { context, user in
            // libpulse copies what it sends before returning: the C strings need only live through the call.
            let names = settings.map { strdup($0.name) }
            let devices = settings.map { $0.device.map { strdup($0) } ?? nil }
            defer {
                names.forEach { free($0) }
                devices.forEach { free($0) }
            }
            var entries = settings.enumerated().map { index, setting in
                var entry = pa_ext_stream_restore_info()
                entry.name = UnsafePointer(names[index])
                entry.device = devices[index].map { UnsafePointer($0) }
                entry.mute = setting.muted ? 1 : 0
                if let volume = setting.volume, volume.count == setting.channelMap.count, (1...Int(PA_CHANNELS_MAX)).contains(volume.count) {
                    entry.volume.channels = UInt8(volume.count)
                    entry.channel_map.channels = UInt8(volume.count)
                    withUnsafeMutableBytes(of: &entry.volume.values) { raw in
                        for (channel, value) in volume.enumerated() { raw.storeBytes(of: value, toByteOffset: channel * 4, as: UInt32.self) }
                    }
                    withUnsafeMutableBytes(of: &entry.channel_map.map) { raw in
                        let size = MemoryLayout<pa_channel_position_t>.stride
                        for (channel, position) in setting.channelMap.enumerated() {
                            raw.storeBytes(of: pa_channel_position_t(rawValue: Int32(bitPattern: position)), toByteOffset: channel * size,
                                           as: pa_channel_position_t.self)
                        }
                    }
                }
                return entry
            }
            return pa_ext_stream_restore_write(context, PA_UPDATE_REPLACE, &entries, UInt32(entries.count), 0,
                                               Self.commandAnswered, user)
        }
        if code != 0 { throw MixerError.failed("write the server's stream memory: \(Self.describe(code))") }
    }

    func forgetRemembered(_ names: [String]) async throws {
        guard !names.isEmpty else { return }
        let code = try await request("delete from the server's stream memory", initial: Int32(0)) { context, user in
            let copies = names.map { strdup($0) }
            defer { copies.forEach { free($0) } }
            var pointers: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) } + [nil]
            return pa_ext_stream_restore_delete(context, &pointers, Self.commandAnswered, user)
        }
        if code != 0 { throw MixerError.failed("delete from the server's stream memory: \(Self.describe(code))") }
    }

    /// Writes the entries so that the server holds them when this returns. pipewire-pulse acknowledges
    /// a write before passing it on, and WirePlumber takes up only a metadata value that changed: so
    /// there each entry goes first with its volume off by one step (inaudible), then as it is, and
    /// this waits until the server lists them, at most `memoryTakeUpTimeout` (5 s: below the
    /// service's helper-answer, 8 s).
    func remember(_ settings: [RememberedSetting], memory: ServerMemory) async throws {
        switch memory {
        case .nothing:
            throw MixerError.unsupported("the sound server remembers no stream settings")
        case .readWrite:
            try await writeRemembered(settings)
        case .writeOnly:
            try await writeRemembered(settings.map(\.nudged))
            try await writeRemembered(settings)
            let deadline = ContinuousClock.now + self.settings.memoryTakeUpTimeout
            var listed: [String: RememberedSetting] = [:]
            while ContinuousClock.now < deadline {
                listed = try await listing()
                if settings.allSatisfy({ listed[$0.name]?.isClose(to: $0) == true }) { return }
                try await Task.sleep(for: .milliseconds(5))
            }
            let held = settings.map { "\($0.name): \(listed[$0.name].map { "\($0)" } ?? "nothing")" }.joined(separator: ", ")
            throw MixerError.unavailable("the server did not list the stream memory it was given within \(self.settings.memoryTakeUpTimeout) (it lists \(held))")
        }
    }

    /// The names of `settings` the server lists as given (to pipewire-pulse's rounding).
    func heldAsGiven(_ settings: [RememberedSetting]) async throws -> Set<String> {
        let listed = try await listing()
        return Set(settings.filter { listed[$0.name]?.isClose(to: $0) == true }.map(\.name))
    }

    private func listing() async throws -> [String: RememberedSetting] {
        Dictionary(try await rememberedSettings().map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// Asks for an event at every change of the memory; a server without it refuses,
    /// which changes nothing (it then has nothing to report).
    func subscribeToMemory(_ context: OpaquePointer) {
        pa_ext_stream_restore_set_subscribe_cb(context, { _, user in
            MixerConnection.owner(user).eventSink.yield(.rememberedChanged)
        }, selfPointer)
        if let operation = pa_ext_stream_restore_subscribe(context, 1, nil, nil) { pa_operation_unref(operation) }
    }
}

extension RememberedSetting {
    /// The same with every channel one step away: a value the metadata did not hold before.
    var nudged: RememberedSetting {
        var copy = self
        copy.volume = volume?.map { $0 > 0 ? $0 - 1 : 1 }
        return copy
    }

    /// Equal but for the rounding of pipewire-pulse's float volumes.
    func isClose(to other: RememberedSetting) -> Bool {
        guard muted == other.muted, name == other.name else { return false }
        guard let volume, let wanted = other.volume else { return other.volume == nil }
        return volume.count == wanted.count && zip(volume, wanted).allSatisfy { abs(Int($0) - Int($1)) <= 2 }
    }

    init(_ info: pa_ext_stream_restore_info) {
        let channels = Int(info.volume.channels)
        let volume = channels > 0 ? PlaybackStream.channels(info.volume) : nil
        let map = withUnsafeBytes(of: info.channel_map.map) { raw in
            (0..<min(Int(info.channel_map.channels), Int(PA_CHANNELS_MAX))).map {
                UInt32(bitPattern: raw.load(fromByteOffset: $0 * MemoryLayout<pa_channel_position_t>.stride,
                                            as: pa_channel_position_t.self).rawValue)
            }
        }
        self.init(name: info.name.map { String(cString: $0) } ?? "", muted: info.mute != 0, volume: volume,
                  channelMap: volume == nil ? [] : map, device: info.device.map { String(cString: $0) })
    }
}
