// The NATS C client (libnats-dev 3.4) for the change log and presence on NATS. Everything in nats.h
// imports into Swift as it is; this header only names it in one place, beside the module map.
#ifndef PINWHEEL_NATS_SHIM_H
#define PINWHEEL_NATS_SHIM_H

#include <nats/nats.h>

#endif
