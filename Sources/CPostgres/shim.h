// PostgreSQL's own C client (Debian libpq-dev), for the PostgreSQL store.
#include <libpq-fe.h>
