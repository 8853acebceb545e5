/* The release version, defined once for --version, JSON and SARIF. */
#ifndef KL_VERSION_H
#define KL_VERSION_H

/* Semantic version of this release. */
#define KL_VERSION "0.1.0"

#endif
