function test_mex(root)
% TEST_MEX  Checks examples-matlab/n5_read_region_mex on the container that
% tests/ffi/mex_fixture.c wrote at ROOT. Run by ctest (test ffi.mex):
%   octave-cli --no-gui --no-window-system -q --eval \
%     "addpath('<mex dir>'); addpath('<tests/ffi>'); test_mex('<container>')"
% Any failed check raises an error, which makes octave-cli exit non-zero.

  checks = 0;

  % Every numeric dtype: class, size and values (N5 order = column-major).
  names = {'uint8', 'uint16', 'uint32', 'uint64', 'int8', 'int16', 'int32', ...
           'int64', 'single', 'double'};
  n5names = {'uint8', 'uint16', 'uint32', 'uint64', 'int8', 'int16', 'int32', ...
             'int64', 'float32', 'float64'};
  for k = 1:numel(names)
    want = reshape(1:60, [5 4 3]);
    if strncmp(names{k}, 'int', 3)
      want = -want;
    elseif any(strcmp(names{k}, {'single', 'double'}))
      want = want / 4;
    end
    want = cast(want, names{k});
    data = n5_read_region_mex(root, n5names{k}, [0 0 0], [5 4 3]);
    expect(strcmp(class(data), names{k}), ...
           sprintf('%s: class is %s', n5names{k}, class(data)));
    expect(isequal(size(data), [5 4 3]), sprintf('%s: size', n5names{k}));
    expect(isequal(data, want), sprintf('%s: values', n5names{k}));
    % An unaligned region: 0-based offset (1, 2, 1) is MATLAB index (2, 3, 2).
    part = n5_read_region_mex(root, n5names{k}, [1 2 1], [3 2 2]);
    expect(isequal(part, want(2:4, 3:4, 2:3)), sprintf('%s: region', n5names{k}));
    expect(strcmp(class(part), names{k}), sprintf('%s: region class', n5names{k}));
    % The whole dataset when offset and shape are left out.
    expect(isequal(n5_read_region_mex(root, n5names{k}), want), ...
           sprintf('%s: whole dataset', n5names{k}));
    checks = checks + 5;
  end

  % Offsets and shapes of integer classes; a trailing extent of 1.
  data = n5_read_region_mex(root, 'uint16', uint8([4 3 2]), int32([1 1 1]));
  expect(isequal(data, uint16(60)) && strcmp(class(data), 'uint16'), 'integer offsets');
  data = n5_read_region_mex(root, 'uint16', [0 0 2], [5 4 1]);
  expect(isequal(size(data), [5 4]), 'trailing singleton dimension');
  % An empty region.
  data = n5_read_region_mex(root, 'int8', [5 0 0], [0 4 3]);
  expect(isempty(data) && strcmp(class(data), 'int8'), 'empty region');

  % uint64 beyond double precision arrives exactly.
  big = n5_read_region_mex(root, 'big_uint64');
  expect(strcmp(class(big), 'uint64') && isequal(size(big), [3 1]), 'big_uint64: class, size');
  expect(big(1) == bitshift(uint64(1), 63), 'big_uint64: 2^63');
  expect(big(3) - big(1) == uint64(2), 'big_uint64: 2^63 + 2');

  % A 1-D dataset is a column vector.
  v = n5_read_region_mex(root, 'vector', 2, 5);
  expect(isequal(v, uint16([6; 9; 12; 15; 18])), '1-D region');

  % Blocks never written read as zeros.
  s = n5_read_region_mex(root, 'sparse');
  want = zeros(6, 6, 'uint8');
  want(4:6, 4:6) = 9;
  expect(isequal(s, want), 'sparse dataset');
  checks = checks + 9;

  % Errors: libn5's status name as the identifier, its message as the text.
  expect_error(@() n5_read_region_mex(root, 'nope', 0, 1), 'n5:N5_ERR_NOT_FOUND', ...
               'n5_dataset_open');
  expect_error(@() n5_read_region_mex([root '/no-such-dir'], 'uint8'), ...
               'n5:N5_ERR_NOT_FOUND', 'n5_container_open');
  expect_error(@() n5_read_region_mex(root, 'uint8', [0 0 1], [5 4 3]), ...
               'n5:N5_ERR_OUT_OF_BOUNDS', 'dimension 2');
  expect_error(@() n5_read_region_mex(root, 'uint8', [0 0], [5 4]), 'n5:badArgument', ...
               'offset');
  expect_error(@() n5_read_region_mex(root, 'uint8', [0 -1 0], [1 1 1]), ...
               'n5:badArgument', 'offset(2)');
  expect_error(@() n5_read_region_mex(root, 'uint8', [0 0 0], [1.5 1 1]), ...
               'n5:badArgument', 'shape(1)');
  expect_error(@() n5_read_region_mex(root, 'strings'), 'n5:unsupportedType', 'string');
  expect_error(@() n5_read_region_mex(root), 'n5:badArgument', 'usage');
  expect_error(@() n5_read_region_mex(42, 'uint8'), 'n5:badArgument', 'character');
  checks = checks + 9;

  printf('test_mex: all %d checks passed\n', checks);
end

function expect(ok, what)
  if ~ok
    error('test_mex:failed', 'check failed: %s', what);
  end
end

function expect_error(f, id, fragment)
  try
    f();
  catch err
    if ~strcmp(err.identifier, id) || isempty(strfind(err.message, fragment))
      error('test_mex:failed', 'expected error %s mentioning "%s", got %s: %s', ...
            id, fragment, err.identifier, err.message);
    end
    return;
  end
  error('test_mex:failed', 'expected error %s, but the call succeeded', id);
end
