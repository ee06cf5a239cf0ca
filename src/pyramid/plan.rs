//! Pyramid options (the `options_json` of `n5_pyramid_build`), axes, units, factors and the levels they give.
