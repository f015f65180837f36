import type { PhotoSize } from 'grammy/types';

/**
 * Which of a photo's sizes to read: the one with the most pixels among those within
 * `maxBytes` (IMAGE_MAX_BYTES; a size without file_size counts as within, its download being
 * bounded anyway), else the largest, which the caller then refuses as too big. Telegram sends
 * each photo in several sizes: refusing the original when a smaller one fits would tell the
 * user their photo is too large when it need not be.
 */
export function photoToRead(sizes: readonly PhotoSize[], maxBytes: number): PhotoSize | undefined {
  const within = sizes.filter((size) => (size.file_size ?? 0) <= maxBytes);
  return largestPhoto(within.length > 0 ? within : sizes);
}

/**
 * The size of a photo with the most pixels. Telegram always gives a size's width and height but
 * may leave out its file_size, so bytes break only a tie in pixels, and only where both sizes
 * give them: a pixel count is never weighed against a byte count.
 */
function largestPhoto(sizes: readonly PhotoSize[]): PhotoSize | undefined {
  let largest: PhotoSize | undefined;
  for (const size of sizes) {
    if (!largest) {
      largest = size;
      continue;
    }
    const pixels = size.width * size.height;
    const most = largest.width * largest.height;
    const moreBytes =
      size.file_size !== undefined &&
      largest.file_size !== undefined &&
      size.file_size > largest.file_size;
    if (pixels > most || (pixels === most && moreBytes)) largest = size;
  }
  return largest;
}
