import CPulse
import VoiceboxContract
import VoiceboxCore

/// Sink inputs and source outputs: reading them, following their changes, mute and volume.
extension MixerConnection {
    func playbackStreams() async throws -> [PlaybackStream] {
        try await request("list playback streams", initial: [PlaybackStream]()) { context, user in
            pa_context_get_sink_input_info_list(context, { context, info, eol, user in
                let request = Request<[PlaybackStream]>.from(user)
                if eol == 0, let info { return request.value.append(PlaybackStream(info.pointee)) }
                request.finish(eol < 0 ? .failed(MixerConnection.describe(pa_context_errno(context))) : nil)
            }, user)
        }
    }

    func recordingStreams() async throws -> [RecordingStream] {
        try await request("list recording streams", initial: [RecordingStream]()) { context, user in
            pa_context_get_source_output_info_list(context, { context, info, eol, user in
                let request = Request<[RecordingStream]>.from(user)
                if eol == 0, let info { return request.value.append(RecordingStream(info.pointee)) }
                request.finish(eol < 0 ? .failed(MixerConnection.describe(pa_context_errno(context))) : nil)
            }, user)
        }
    }

    func setMute(_ index: UInt32, _ muted: Bool) async throws {
        try await streamCommand("mute", index: index) { context, user in
            pa_context_set_sink_input_mute(context, index, muted ? 1 : 0, Self.commandAnswered, user)
        }
    }

    func setVolume(_ index: UInt32, _ volume: [UInt32]) async throws {
        guard (1...Int(PA_CHANNELS_MAX)).contains(volume.count) else {
            throw MixerError.failed("a volume needs 1 to \(PA_CHANNELS_MAX) channel values, not \(volume.count)")
        }
        var levels = pa_cvolume()
        levels.channels = UInt8(volume.count)
        withUnsafeMutableBytes(of: &levels.values) { raw in
            for (channel, value) in volume.enumerated() { raw.storeBytes(of: value, toByteOffset: channel * 4, as: UInt32.self) }
        }
        // The server also refuses a channel count other than the stream's: `failed`, with its reason.
        try await streamCommand("set volume", index: index) { context, user in
            pa_context_set_sink_input_volume(context, index, &levels, Self.commandAnswered, user)
        }
    }

    /// (A libpulse callback.) One subscription event: a stream's new state is fetched
    /// and yielded; a removal is yielded at once. The server answers in order, so a fetch for a
    /// stream removed meanwhile finds nothing (and yields nothing) rather than overtaking the removal.
    func serverEvent(_ type: pa_subscription_event_type_t, _ index: UInt32) {
        guard let context, phase == .ready else { return }
        let facility = type.rawValue & PA_SUBSCRIPTION_EVENT_FACILITY_MASK.rawValue
        let removed = type.rawValue & PA_SUBSCRIPTION_EVENT_TYPE_MASK.rawValue == PA_SUBSCRIPTION_EVENT_REMOVE.rawValue
        switch facility {
        case PA_SUBSCRIPTION_EVENT_SINK_INPUT.rawValue:
            if removed { eventSink.yield(.playbackRemoved(index)); return }
            let operation = pa_context_get_sink_input_info(context, index, { _, info, eol, user in
                guard eol == 0, let info else { return }
                MixerConnection.owner(user).eventSink.yield(.playbackChanged(PlaybackStream(info.pointee)))
            }, selfPointer)
            if let operation { pa_operation_unref(operation) }
        case PA_SUBSCRIPTION_EVENT_SOURCE_OUTPUT.rawValue:
            if removed { eventSink.yield(.recordingRemoved(index)); return }
            let operation = pa_context_get_source_output_info(context, index, { _, info, eol, user in
                guard eol == 0, let info else { return }
                MixerConnection.owner(user).eventSink.yield(.recordingChanged(RecordingStream(info.pointee)))
            }, selfPointer)
            if let operation { pa_operation_unref(operation) }
        default:
            // A module loaded or unloaded (module-role-cork?), or the server's defaults changed.
            cachedInfo = nil
            infoGeneration += 1
        }
    }
}

/// (PA_INVALID_INDEX, (uint32_t) -1, does not import into Swift: UInt32.max is the same.)
extension PlaybackStream {
    init(_ info: pa_sink_input_info) {
        let properties = StreamProperties(info.proplist)
        self.init(id: info.index, client: info.client == UInt32.max ? nil : info.client,
                  applicationName: properties.applicationName, processID: properties.processID, role: properties.role,
                  mediaName: properties.mediaName, muted: info.mute != 0, volume: Self.channels(info.volume),
                  corked: info.corked != 0, memoryKey: properties.memoryKey, channelMap: Self.positions(info.channel_map))
    }

    nonisolated static func positions(_ map: pa_channel_map) -> [UInt32] {
        withUnsafeBytes(of: map.map) { raw in
            (0..<min(Int(map.channels), Int(PA_CHANNELS_MAX))).map {
                UInt32(bitPattern: raw.load(fromByteOffset: $0 * MemoryLayout<pa_channel_position_t>.stride,
                                            as: pa_channel_position_t.self).rawValue)
            }
        }
    }

    nonisolated static func channels(_ volume: pa_cvolume) -> [UInt32] {
        withUnsafeBytes(of: volume.values) { raw in
            (0..<min(Int(volume.channels), Int(PA_CHANNELS_MAX))).map { raw.load(fromByteOffset: $0 * 4, as: UInt32.self) }
        }
    }
}

extension RecordingStream {
    init(_ info: pa_source_output_info) {
        let properties = StreamProperties(info.proplist)
        self.init(id: info.index, client: info.client == UInt32.max ? nil : info.client,
                  applicationName: properties.applicationName, processID: properties.processID, role: properties.role,
                  corked: info.corked != 0)
    }
}

/// The properties the policy looks at, read out of a stream's proplist.
struct StreamProperties {
    var applicationName: String?
    var processID: Int32?
    var role: String?
    var mediaName: String?
    /// module-stream-restore's name for the stream's entry: the one it set on the stream, or (on
    /// pipewire-pulse, which sets none) the one it would choose, by the same rule: role, then
    /// application id, application name, media name. pipewire-pulse maps it onto WirePlumber's key.
    var memoryKey: String?

    init(_ list: OpaquePointer?) {
        func text(_ key: String) -> String? {
            guard let list, let value = pa_proplist_gets(list, key) else { return nil }
            return String(cString: value)
        }
        applicationName = text(PA_PROP_APPLICATION_NAME)
        processID = text(PA_PROP_APPLICATION_PROCESS_ID).flatMap { Int32($0) }
        role = text(PA_PROP_MEDIA_ROLE)
        mediaName = text(PA_PROP_MEDIA_NAME)
        if let id = text("module-stream-restore.id") {
            memoryKey = id
        } else if let role {
            memoryKey = "sink-input-by-media-role:" + role
        } else if let id = text(PA_PROP_APPLICATION_ID) {
            memoryKey = "sink-input-by-application-id:" + id
        } else if let applicationName {
            memoryKey = "sink-input-by-application-name:" + applicationName
        } else if let mediaName {
            memoryKey = "sink-input-by-media-name:" + mediaName
        }
    }
}
