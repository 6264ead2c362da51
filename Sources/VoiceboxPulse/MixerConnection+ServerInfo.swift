import CPulse
import VoiceboxContract
import VoiceboxCore

/// What the server is (name, version, pipewire-pulse?) and whether module-role-cork is loaded.
extension MixerConnection {
    func serverInfo() async throws -> SoundServerInfo {
        try await waitUntilReady()
        let (cached, generation) = (cachedInfo, infoGeneration)
        if let cached { return cached }

        let identity = try await request("server info", initial: ["", ""]) { context, user in
            pa_context_get_server_info(context, { context, info, user in
                let request = Request<[String]>.from(user)
                guard let info else { return request.finish(.failed(MixerConnection.describe(pa_context_errno(context)))) }
                request.value = [info.pointee.server_name.map { String(cString: $0) } ?? "",
                                 info.pointee.server_version.map { String(cString: $0) } ?? ""]
                request.finish()
            }, user)
        }
        // Only module-role-cork's arguments are kept (it is load-once, so at most one), and whether
        // module-stream-restore is there.
        let modules = try await request("list modules", initial: LoadedModules()) { context, user in
            pa_context_get_module_info_list(context, { context, info, eol, user in
                let request = Request<LoadedModules>.from(user)
                if eol == 0, let info {
                    switch info.pointee.name.map({ String(cString: $0) }) {
                    case "module-role-cork": request.value.roleCork = info.pointee.argument.map { String(cString: $0) } ?? ""
                    case "module-stream-restore": request.value.streamRestore = true
                    default: break
                    }
                    return
                }
                request.finish(eol < 0 ? .failed(MixerConnection.describe(pa_context_errno(context))) : nil)
            }, user)
        }

        let cork = modules.roleCork.map { RoleCorkArguments(parsing: $0) }
        let isPipeWire = identity[0].contains("PipeWire")
        // pipewire-pulse lists no module-stream-restore, yet passes ext-stream-restore writes on to
        // WirePlumber's restore-stream (see MixerConnection+Memory).
        let memory: ServerMemory = isPipeWire ? .writeOnly : modules.streamRestore ? .readWrite : .nothing
        let info = SoundServerInfo(name: identity[0], version: identity[1], isPipeWire: isPipeWire,
                                   roleCorkTriggers: cork?.triggerRoles ?? [], roleCorkTargets: cork?.corkRoles ?? [], memory: memory)
        // Kept unless a module or server event (or a reconnect) came in while we asked.
        if infoGeneration == generation { cachedInfo = info }
        return info
    }
}

/// What `serverInfo` wants to know of the loaded modules.
struct LoadedModules: Sendable {
    var roleCork: String?
    var streamRestore = false
}
