/// Which listener accepted a connection.
public enum ListenerKind: UInt8, Sendable {
    case https, http, admin

    package var name: String {
        switch self {
        case .https: return "https"
        case .http: return "http"
        case .admin: return "admin"
        }
    }
}
