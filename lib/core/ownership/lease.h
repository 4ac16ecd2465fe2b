/* SPDX-License-Identifier: MIT */
/*
 * The array's lease from a lock manager (docs/REMOTE.md, "The lease"): held by a writable
 * open for its whole life, so a second host's open is refused while the first lives, and
 * a host that loses it stops writing. One small interface, one implementation per lock
 * manager behind it (sanlock now: lease_sanlock.c); the spec names which.
 */
#ifndef LIBGRAID_CORE_LEASE_H
#define LIBGRAID_CORE_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct array_lease;

/* What one lock manager provides (lease.c dispatches on the spec's "NAME:" prefix). */
struct lease_ops {
	const char *name;
	/* Parse the spec's rest (after "NAME:"); 0, or -EINVAL having logged what is wrong. */
	int (*parse)(struct array_lease *l, const char *rest);
	/* Make the lease area ready for the array: written once, before the first open. */
	int (*init)(struct array_lease *l);
	/* Take it; -EBUSY while another host holds it (@p holder says who), or -errno. */
	int (*acquire)(struct array_lease *l, char *holder, size_t len);
	/* Without blocking: true when it is lost (or will be), @p why says how. */
	bool (*lost)(struct array_lease *l, char *why, size_t len);
	/* Give it back (or forget it, when lost) and free what acquire made. */
	void (*release)(struct array_lease *l);
	void (*free)(struct array_lease *l);
};

/* lease_sanlock.c */
extern const struct lease_ops lease_sanlock_ops;

struct array_lease {
	const struct lease_ops *ops;
	uint8_t uuid[16];     /* the array's: names the lockspace */
	char spec[1100];      /* as given, for messages */
	bool held;
	void *impl;           /* the lock manager's own state */
};

/*
 * Parse @p spec ("sanlock:OPTIONS:PATH", docs/REMOTE.md) for the array @p uuid. 0 and
 * *@p out; -EINVAL a spec that names no known lock manager or is malformed (logged);
 * -EOPNOTSUPP a lock manager this libgraid was built without; -ENOMEM.
 */
int lease_open(const char *spec, const uint8_t uuid[16], struct array_lease **out);
/* Write the lease area for the array (before its first open with this lease). */
static inline int lease_init_area(struct array_lease *l)
{
	return l->ops->init(l);
}

/* Release it if held, and free it; NULL is fine. */
void lease_close(struct array_lease *l);

static inline int lease_acquire(struct array_lease *l, char *holder, size_t len)
{
	int rc = l->ops->acquire(l, holder, len);

	l->held = rc == 0;
	return rc;
}

/* Without blocking: whether a held lease is lost (@p why says how). */
static inline bool lease_lost(struct array_lease *l, char *why, size_t len)
{
	return l->held && l->ops->lost(l, why, len);
}

/* Give a lost lease back, as far as the lock manager can be told: after the writes stopped. */
static inline void lease_drop(struct array_lease *l)
{
	if (l->held)
		l->ops->release(l);
	l->held = false;
}

#endif /* LIBGRAID_CORE_LEASE_H */
