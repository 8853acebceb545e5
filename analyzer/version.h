/* The release version and project address, defined once for --version, JSON and SARIF. */
#ifndef KL_VERSION_H
#define KL_VERSION_H

/* Semantic version of this release. */
#define KL_VERSION "0.1.0"
/* Where users learn about the tool; SARIF's informationUri. */
#define KL_HOMEPAGE "https://github.com/kernlint/kernlint"

#endif
